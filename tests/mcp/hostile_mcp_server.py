"""A misbehaving MCP server for the tests: raw JSON lines over stdio, no SDK.

``python hostile_mcp_server.py FAULT [SIZE]`` answers the handshake as a server should, and
offers two tools: ``echo``, which always works, and ``hostile``, whose reply is ``FAULT``:

* ``truncated``: the reply's JSON line is cut in the middle;
* ``not-jsonrpc``: a JSON line that is not a JSON-RPC message;
* ``wrong-id``: a well-formed result for a request that was never made;
* ``silent``: no reply at all;
* ``huge``: a text result of ``SIZE`` bytes;
* ``huge-id-last``: the same, its id written last (as some JSON-RPC libraries do);
* ``huge-error``: an ``isError`` result whose text is ``SIZE`` bytes;
* ``endless-pages``: ``tools/list`` never stops paginating (no ``hostile`` call needed);
* ``many-tools``: ``tools/list`` lists ``SIZE`` more tools, ``tool0`` and on.

Every other request gets an empty result, so the session stays usable after a fault.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(request: dict[str, Any], value: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "result": value})


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def list_tools(request: dict[str, Any], fault: str, size: int) -> None:
    tools = [
        {"name": "echo", "description": "Echo the text.", "inputSchema": SCHEMA},
        {"name": "hostile", "description": f"Reply with: {fault}.", "inputSchema": SCHEMA},
    ]
    if fault == "many-tools":
        tools += [{"name": f"tool{i}", "inputSchema": SCHEMA} for i in range(size)]
    if fault != "endless-pages":
        result(request, {"tools": tools})
        return
    page = int((request.get("params") or {}).get("cursor") or 0)
    many = [{**tool, "name": f"{tool['name']}{page}"} for tool in tools]
    result(request, {"tools": many, "nextCursor": str(page + 1)})


def call_hostile(request: dict[str, Any], fault: str, size: int) -> None:
    if fault == "truncated":
        line = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": text_result("cut")})
        sys.stdout.write(line[: len(line) // 2] + "\n")
        sys.stdout.flush()
    elif fault == "not-jsonrpc":
        send({"hello": "world", "id": request["id"]})
    elif fault == "wrong-id":
        send({"jsonrpc": "2.0", "id": 10_000 + request["id"], "result": text_result("lost")})
    elif fault == "huge":
        result(request, text_result("x" * size))
    elif fault == "huge-id-last":
        send({"result": text_result("x" * size), "jsonrpc": "2.0", "id": request["id"]})
    elif fault == "huge-error":
        result(request, text_result("e" * size, is_error=True))
    # "silent": no reply


def answer(request: dict[str, Any], fault: str, size: int) -> None:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        result(
            request,
            {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            },
        )
    elif method == "tools/list":
        list_tools(request, fault, size)
    elif method == "tools/call" and params.get("name") == "hostile":
        call_hostile(request, fault, size)
    elif method == "tools/call":
        text = (params.get("arguments") or {}).get("text", "")
        result(request, text_result(text))
    else:
        result(request, {})


def main() -> None:
    fault = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message and "method" in message:  # a request; notifications need no answer
            answer(message, fault, size)


if __name__ == "__main__":
    main()
