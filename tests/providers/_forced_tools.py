"""The four HTTP APIs side by side, for tests of which tool a request lets the model call.

:func:`tool_call_reply` is one streamed reply per API calling a tool; :func:`models` points a
model of each API at a replay server; :func:`choice_of` reads a recorded request body back as
the :data:`~pi_core.ToolChoice` it expresses, by each API's documented fields, and
:func:`choice_problems` lists what that API would refuse about it (a choice without tools, a
named tool the request does not declare, a forced tool beside thinking on Anthropic).
"""

from __future__ import annotations

import json
from typing import Any

from _replay_server import Reply, sse_event

from pi_core import Model
from pi_core.providers import anthropic, google, openai, openai_responses

__all__ = [
    "APIS",
    "STREAMS",
    "choice_of",
    "choice_problems",
    "declared",
    "models",
    "sampling_of",
    "text_reply",
    "tool_call_reply",
]

STREAMS = {
    openai.API: openai.stream_openai,
    anthropic.API: anthropic.stream_anthropic,
    openai_responses.API: openai_responses.stream_openai_responses,
    google.API: google.stream_google,
}
APIS = list(STREAMS)
CHAT, CLAUDE, RESPONSES, GEMINI = APIS


def models(base_url: str) -> dict[str, Model]:
    return {
        CHAT: Model("gpt-chat", api=CHAT, provider="openai", base_url=f"{base_url}/v1"),
        CLAUDE: Model("claude-x", api=CLAUDE, provider="anthropic", base_url=base_url),
        RESPONSES: Model("gpt-resp", api=RESPONSES, provider="openai", base_url=f"{base_url}/v1"),
        GEMINI: Model("gemini-2.5-flash", api=GEMINI, provider="google", base_url=f"{base_url}/v1beta"),
    }  # fmt: skip


def _event(kind: str, **data: Any) -> bytes:
    return sse_event({"type": kind, **data}, event=kind)


def tool_call_reply(api: str, name: str, arguments: str, call_id: str = "call_1") -> Reply:
    """One reply of ``api`` that calls ``name`` with the JSON text ``arguments``."""
    if api == CHAT:
        call = {
            "index": 0,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        return Reply(chunks=[
            sse_event({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}),
            sse_event({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            sse_event("[DONE]"),
        ])  # fmt: skip
    if api == CLAUDE:
        block = {"type": "tool_use", "id": f"toolu_{call_id}", "name": name, "input": {}}
        return Reply(chunks=[
            _event("message_start", message={"id": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}),
            _event("content_block_start", index=0, content_block=block),
            _event("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": arguments}),
            _event("content_block_stop", index=0),
            _event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 5}),
            _event("message_stop"),
        ])  # fmt: skip
    if api == RESPONSES:
        item = {"id": f"fc_{call_id}", "type": "function_call", "call_id": call_id, "name": name}
        return Reply(chunks=[
            _event("response.created", response={"id": "r", "status": "in_progress"}),
            _event("response.output_item.added", output_index=0, item={**item, "arguments": ""}),
            _event("response.function_call_arguments.delta", output_index=0, delta=arguments),
            _event("response.output_item.done", output_index=0, item={**item, "arguments": arguments}),
            _event("response.completed", response={"id": "r", "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1}}),
        ])  # fmt: skip
    part = {"functionCall": {"name": name, "args": json.loads(arguments)}}
    data = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]}
    return Reply(chunks=[f"data: {json.dumps(data)}\r\n\r\n".encode()])


def text_reply(api: str, text: str) -> Reply:
    """One reply of ``api`` that answers ``text`` and calls nothing."""
    if api == CHAT:
        return Reply(chunks=[
            sse_event({"id": "c", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}),
            sse_event({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            sse_event("[DONE]"),
        ])  # fmt: skip
    if api == CLAUDE:
        return Reply(chunks=[
            _event("message_start", message={"id": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}),
            _event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            _event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
            _event("content_block_stop", index=0),
            _event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 5}),
            _event("message_stop"),
        ])  # fmt: skip
    if api == RESPONSES:
        item = {"id": "msg_1", "type": "message", "role": "assistant"}
        done = {**item, "content": [{"type": "output_text", "text": text}]}
        return Reply(chunks=[
            _event("response.created", response={"id": "r", "status": "in_progress"}),
            _event("response.output_item.added", output_index=0, item={**item, "content": []}),
            _event("response.output_text.delta", output_index=0, content_index=0, delta=text),
            _event("response.output_item.done", output_index=0, item=done),
            _event("response.completed", response={"id": "r", "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1}}),
        ])  # fmt: skip
    data = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ]
    }
    return Reply(chunks=[f"data: {json.dumps(data)}\r\n\r\n".encode()])


def declared(api: str, body: dict[str, Any]) -> list[str]:
    """The names of the tools the request declares."""
    tools = body.get("tools") or []
    if api == CHAT:
        return [tool["function"]["name"] for tool in tools]
    if api == GEMINI:
        return [d["name"] for tool in tools for d in tool.get("functionDeclarations", [])]
    return [tool["name"] for tool in tools]


def choice_of(api: str, body: dict[str, Any]) -> Any:
    """The request's tool choice, read by the API's documented fields: ``None`` when it sends
    none, ``"auto"``, ``"none"``, ``"required"`` or ``{"name": tool}``."""
    if api == GEMINI:
        config = (body.get("toolConfig") or {}).get("functionCallingConfig")
        if config is None:
            return None
        names = config.get("allowedFunctionNames")
        if config["mode"] == "ANY" and names:
            return {"name": names[0]} if len(names) == 1 else names
        return {"AUTO": "auto", "NONE": "none", "ANY": "required"}[config["mode"]]
    choice = body.get("tool_choice")
    if choice is None or isinstance(choice, str):
        return choice
    if api == CLAUDE:
        kind = choice["type"]
        return {"name": choice["name"]} if kind == "tool" else {"any": "required"}.get(kind, kind)
    if api == CHAT:
        return {"name": choice["function"]["name"]}
    return {"name": choice["name"]}


def choice_problems(api: str, body: dict[str, Any]) -> list[str]:
    """What ``api`` would refuse about the request's tool choice."""
    choice = choice_of(api, body)
    found = []
    if choice is not None and not body.get("tools"):
        found.append("a tool choice without tools")
    if isinstance(choice, dict) and choice["name"] not in declared(api, body):
        found.append(f"forces {choice['name']!r}, which the request does not declare")
    thinking = (body.get("thinking") or {}).get("type") not in (None, "disabled")
    if api == CLAUDE and thinking and choice not in (None, "auto", "none"):
        found.append("forces a tool with thinking on")
    return found


def sampling_of(body: dict[str, Any]) -> dict[str, Any]:
    """The body's sampling parameters beyond the named ones."""
    return {
        key: body[key] for key in ("top_p", "top_k", "min_p", "repetition_penalty") if key in body
    }
