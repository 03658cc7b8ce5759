"""The real TypeScript client: pi-agent-core 0.73.1's ``streamProxy`` against our server.

``interop/stream.mjs`` runs it under Node and prints the events and the rebuilt message as
JSON. The tests skip (saying why) when node or npm is missing or ``npm ci`` fails; the nox
session ``interop`` runs them in CI.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from _proxy_support import serve_app

from node_interop import INTEROP, NODE_DEADLINE
from pi_core import AssistantMessageEvent, Context, Model, StreamOptions
from pi_core.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from pi_core.proxy import create_proxy_app
from pi_core.serialization import to_dict

pytestmark = pytest.mark.anyio

TOKEN = "interop-token"

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


async def run_ts_client(node: str, url: str, token: str, scenario: str = "reply") -> Any:
    """Run ``stream.mjs`` and return its ``{events, result}``."""
    with anyio.fail_after(NODE_DEADLINE):
        done = await anyio.run_process(
            [node, "stream.mjs", url, token, scenario], cwd=INTEROP, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


class Server:
    """The faux model behind the proxy, and what the server saw: raw bodies, the options and
    the final message of each call, and whether its stream was aborted."""

    def __init__(self) -> None:
        self.faux = FauxProvider(seed=3)
        self.bodies: list[bytes] = []
        self.options: list[StreamOptions] = []
        self.contexts: list[Context] = []
        self.finals: list[AssistantMessageEvent] = []
        self.closed = anyio.Event()
        self.aborted: bool | None = None
        self.app = create_proxy_app(self.stream, auth_token=TOKEN)

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/api/stream":
            await self.app(scope, receive, send)
            return

        async def recording_receive() -> Message:
            message = await receive()
            self.bodies.append(message.get("body", b""))
            return message

        await self.app(scope, recording_receive, send)

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.options.append(options)
        self.contexts.append(context)
        try:
            async with aclosing(self.faux.stream(model, context, options)) as events:  # type: ignore[type-var]
                async for event in events:
                    if event.type in ("done", "error"):
                        self.finals.append(event)
                    yield event
        finally:
            assert options.signal is not None
            self.aborted = options.signal.aborted
            self.closed.set()


async def test_the_ts_client_rebuilds_text_thinking_tool_calls_and_usage(
    node: str, anyio_backend: str
) -> None:
    server = Server()
    server.faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_thinking("Two cities, two calls."),
                    faux_text("Checking the weather in both cities."),
                    faux_tool_call("weather", {"city": "Paris", "days": [1, 2]}, id="call-1"),
                    faux_tool_call("weather", {"city": "Tokyo", "note": "ünïcödé"}, id="call-2"),
                ],
                stop_reason="toolUse",
            )
        ]
    )
    async with serve_app(server, anyio_backend) as url:
        output = await run_ts_client(node, url, TOKEN)

    result = output["result"]
    (final,) = server.finals
    expected = to_dict(final.message)  # type: ignore[union-attr]
    assert result["content"] == expected["content"]
    assert result["content"][2] == {
        "type": "toolCall",
        "id": "call-1",
        "name": "weather",
        "arguments": {"city": "Paris", "days": [1, 2]},
    }
    assert result["usage"] == expected["usage"]
    assert result["usage"]["totalTokens"] > 0
    assert result["stopReason"] == "toolUse"
    assert (result["api"], result["provider"], result["model"]) == ("faux", "faux", "faux-1")
    types = [event["type"] for event in output["events"]]
    assert types[0] == "start" and types[-1] == "done"
    assert types.count("toolcall_end") == 2
    assert output["events"][-1]["reason"] == "toolUse"

    # What the TS client sent: its options (never the API key), tools with label and mode.
    body = json.loads(b"".join(server.bodies))
    assert "apiKey" not in body["options"]
    assert body["options"] == {"temperature": 0.5, "sessionId": "interop"}
    assert body["context"]["tools"][0]["label"] == "Weather"
    (options,) = server.options
    assert (options.temperature, options.session_id, options.api_key) == (0.5, "interop", None)
    assert server.contexts[0].tools[0].name == "weather"


async def test_the_ts_client_shows_a_401_as_proxy_error(node: str, anyio_backend: str) -> None:
    server = Server()
    async with serve_app(server, anyio_backend) as url:
        output = await run_ts_client(node, url, "wrong-token")
    assert [event["type"] for event in output["events"]] == ["error"]
    assert output["result"]["stopReason"] == "error"
    assert output["result"]["errorMessage"] == "Proxy error: Invalid bearer token"
    assert server.faux.call_count == 0


async def test_an_abort_in_the_ts_client_cancels_the_servers_stream(
    node: str, anyio_backend: str
) -> None:
    server = Server()
    server.faux = FauxProvider(tokens_per_second=20, token_size=(1, 1))
    server.faux.set_responses([faux_assistant_message("abcd" * 500)])
    async with serve_app(server, anyio_backend) as url:
        output = await run_ts_client(node, url, TOKEN, "abort")
        with anyio.fail_after(10):
            await server.closed.wait()
    assert output["result"]["stopReason"] == "aborted"
    assert output["result"]["errorMessage"] == "Request aborted by user"
    assert server.aborted is True
