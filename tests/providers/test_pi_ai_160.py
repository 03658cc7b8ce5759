"""Same transcript in, same JSON out: our four HTTP providers against pi-ai 1.6.0's recordings.

``pi_ai_160/*.json`` holds what pi-ai 1.6.0's ``streamSimple`` sent to a local mock of each API
(URL, headers, body) and what it made of the mock's scripted reply (events, stop reason, error
text, content, usage). Each test sends the same transcript through our provider to a replay
server that answers with the same bytes, and compares field for field. Where pi_core differs on
purpose, :data:`DELIBERATE` names the field and says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _replay_server import Reply, open_replay_server, sse_event
from _stream_checks import collect, final_message, kinds

from pi_core import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    serialization,
)
from pi_core.providers import anthropic, google, openai, openai_responses

pytestmark = pytest.mark.anyio

RECORDED = Path(__file__).parent / "pi_ai_160"

PROVIDERS = {
    "openai-completions": ("groq", "/v1", openai.stream_openai),
    "anthropic-messages": ("anthropic", "", anthropic.stream_anthropic),
    "openai-responses": ("openai", "/v1", openai_responses.stream_openai_responses),
    "google-generative-ai": ("google", "/v1beta", google.stream_google),
}

DELIBERATE: dict[str, str] = {
    "url": "pi_core speaks Anthropic's stable Messages endpoint; ?beta=true is the TypeScript "
    "SDK's way of asking for beta features, which pi_core asks for with the anthropic-beta header",
    "headers": "pi_core sends its own User-Agent and none of the TypeScript SDKs' x-stainless-* "
    "headers",
    "events": "pi_core closes a Chat Completions block when the next one begins (one block open "
    "at a time, which its stream protocol promises); pi-ai 1.6.0 keeps them all open to the end",
    "initial text": "the text an Anthropic block starts with is a delta of its own in pi_core, so "
    "that the deltas add up to the text (pi-ai puts it in the block without a delta)",
    "responseModel": "pi_core records the model the server names on every API; pi-ai only on "
    "Chat Completions and Anthropic",
    "argumentsError": "the reason is Python's JSON parser's words, not JavaScript's; the frame "
    "and the quoted text are the same",
    "toolCall.id": "Gemini sends no call ids; both make their own, which differ",
}
"""Where pi_core differs from pi-ai 1.6.0 on purpose, and why (docs/providers.md says so too)."""

MODES = [
    (api, path.stem.removeprefix(f"{api}-"))
    for api in PROVIDERS
    for path in sorted(RECORDED.glob(f"{api}-*.json"))
]

IMAGE = ImageContent("iVBORw0KGgo=", "image/png")


def model_for(api: str, base_url: str) -> Model:
    """The recording's model: a reasoning model that reads images, with the same prices."""
    provider, _, _ = PROVIDERS[api]
    return Model(
        "m1",
        api=api,
        provider=provider,
        base_url=base_url,
        reasoning=True,
        input=("text", "image"),
        cost=ModelCost(1, 2, 0.1, 1.25),
        context_window=200000,
        max_tokens=64000,
    )


def context_for(api: str) -> Context:
    """The recording's transcript: a user text and image, a reply that thought, wrote and called
    a tool, an error result of blank text and an image, then a user text."""
    provider, _, _ = PROVIDERS[api]
    signature = "sig" if api == "anthropic-messages" else None
    reply = AssistantMessage(
        [
            ThinkingContent("think", thinking_signature=signature),
            TextContent("calling"),
            ToolCall("call_1", "echo", {"v": "a"}),
        ],
        api=api,
        provider=provider,
        model="m1",
        stop_reason="toolUse",
        timestamp=2,
    )
    schema = {
        "type": "object",
        "properties": {"v": {"type": "string", "minLength": 1}},
        "required": ["v"],
        "additionalProperties": False,
    }
    return Context(
        "You are terse.",
        [
            UserMessage([TextContent("hi"), IMAGE], timestamp=1),
            reply,
            ToolResultMessage(
                "call_1", "echo", [TextContent("   "), IMAGE], is_error=True, timestamp=3
            ),
            UserMessage("go on", timestamp=4),
        ],
        [Tool("echo", "Echo a value", schema)],
    )


def mock_reply(api: str, mode: str) -> list[bytes]:
    """The bytes the recording's mock answered with."""
    if api == "openai-completions":
        return _completions_reply(mode)
    if api == "anthropic-messages":
        return _anthropic_reply(mode)
    if api == "openai-responses":
        return _responses_reply(mode)
    return _google_reply(mode)


def _completions_reply(mode: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], **extra: Any) -> bytes:
        return sse_event(
            {"id": "cmpl1", "model": "m1", "choices": [{"index": 0, "delta": delta, **extra}]}
        )

    def call(arguments: str, **head: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": 0, **head, "function": {"arguments": arguments}}]}

    first = call('{"v":', id="call_1", type="function")
    first["tool_calls"][0]["function"]["name"] = "echo"
    chunks = [
        chunk({"role": "assistant", "content": "Hel"}),
        chunk(first),
        chunk(call("x y}" if mode == "badargs" else '"x"}')),
    ]
    if mode != "noterm":
        usage = {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 10},
            "completion_tokens_details": {"reasoning_tokens": 5},
        }
        chunks.append(
            sse_event(
                {
                    "id": "cmpl1",
                    "model": "m1",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                    "usage": usage,
                }
            )
        )
    return [*chunks, b"data: [DONE]\n\n"]


def _anthropic_reply(mode: str) -> list[bytes]:
    start_usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_read_input_tokens": 3,
        "cache_creation_input_tokens": 2,
        "cache_creation": {"ephemeral_1h_input_tokens": 2},
    }
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x-2",
        "content": [],
        "stop_reason": None,
        "usage": start_usage,
    }
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": "Hi "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "there"},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    if mode == "nostopreason":
        events.append({"type": "message_stop"})
    if mode == "normal":
        usage = {"output_tokens": 7, "output_tokens_details": {"thinking_tokens": 3}}
        events.append(
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}
        )
        events.append({"type": "message_stop"})
    return [sse_event(event, event["type"]) for event in events]


def _responses_reply(mode: str) -> list[bytes]:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress"}
    done_item = {
        **item,
        "status": "completed",
        "content": [{"type": "output_text", "text": "Hello", "annotations": []}],
    }
    response = {"id": "resp_1", "model": "gpt-x", "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {
            "type": "response.content_part.added",
            "output_index": 0,
            "item_id": "msg_1",
            "content_index": 0,
            "part": {"type": "output_text", "text": ""},
        },
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": "Hello",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
    ]
    if mode != "noterm":
        usage = {
            "input_tokens": 50,
            "output_tokens": 10,
            "input_tokens_details": {"cached_tokens": 20},
            "output_tokens_details": {"reasoning_tokens": 4},
            "total_tokens": 60,
        }
        completed = {**response, "status": "completed", "usage": usage}
        events.append({"type": "response.completed", "response": completed})
    return [sse_event(event) for event in events]


def _google_reply(mode: str) -> list[bytes]:
    def chunk(value: dict[str, Any]) -> bytes:
        return f"data: {json.dumps(value)}\r\n\r\n".encode()

    candidate: dict[str, Any] = {
        "content": {
            "role": "model",
            "parts": [{"functionCall": {"name": "echo", "args": {"v": "x"}}}],
        }
    }
    if mode != "noterm":
        candidate["finishReason"] = "STOP"
    usage = {
        "promptTokenCount": 30,
        "candidatesTokenCount": 5,
        "thoughtsTokenCount": 2,
        "cachedContentTokenCount": 10,
        "totalTokenCount": 37,
    }
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}
    return [
        chunk({**first, "modelVersion": "gemini-x", "responseId": "r1"}),
        chunk({"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-x"}),
    ]


def recorded(api: str, mode: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED / f"{api}-{mode}.json").read_text())
    return data


async def run_recorded(
    api: str, mode: str, anyio_backend: str
) -> tuple[Any, list[AssistantMessageEvent]]:
    """Our request and events for the recording ``api`` / ``mode``."""
    _, prefix, stream_fn = PROVIDERS[api]
    async with open_replay_server([Reply(chunks=mock_reply(api, mode))], anyio_backend) as server:
        model = model_for(api, server.base_url + prefix)
        options = StreamOptions(
            api_key="test-key", reasoning="medium", session_id="sess-1", max_retries=0
        )
        events = await collect(stream_fn(model, context_for(api), options))
    (request,) = server.requests
    return request, events


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, one line per differing leaf."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [
            line
            for key in sorted(set(ours) | set(theirs), key=str)
            for line in differences(
                ours.get(key, "<absent>"), theirs.get(key, "<absent>"), f"{path}.{key}"
            )
        ]
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [
            line
            for index, (mine, other) in enumerate(zip(ours, theirs, strict=True))
            for line in differences(mine, other, f"{path}[{index}]")
        ]
    return [] if ours == theirs else [f"{path}: ours {ours!r}, pi-ai {theirs!r}"]


@pytest.mark.parametrize("api", list(PROVIDERS))
async def test_request_body_as_pi_ai(api: str, anyio_backend: str) -> None:
    request, _ = await run_recorded(api, "normal", anyio_backend)
    theirs = recorded(api, "normal")
    assert differences(request.body, theirs["body"]) == []
    path = theirs["url"].split("?")[0]
    assert request.path == (path if api != "anthropic-messages" else "/v1/messages")  # "url"
    assert request.headers["user-agent"].startswith("pi_core/")  # "headers"


@pytest.mark.parametrize(("api", "mode"), MODES)
async def test_reply_as_pi_ai(api: str, mode: str, anyio_backend: str) -> None:
    _, events = await run_recorded(api, mode, anyio_backend)
    theirs = recorded(api, mode)
    if api != "openai-completions":  # "events"
        assert _merged(kinds(events)) == theirs["events"]  # "initial text"
    ours = serialization.to_dict(final_message(events))
    wanted = dict(theirs["result"])
    ours.pop("responseModel", None), wanted.pop("responseModel", None)  # "responseModel"
    for mine, other in zip(ours["content"], wanted["content"], strict=True):
        if api == "google-generative-ai" and other["type"] == "toolCall":
            mine.pop("id"), other.pop("id")  # "toolCall.id"
        if "argumentsError" in other:  # "argumentsError": the frame and the text
            reason = other.pop("argumentsError")
            assert mine.pop("argumentsError").endswith(reason[reason.index("\n\nReceived") :])
    found = [
        line
        for key, value in wanted.items()
        for line in differences(ours.get(key, "<absent>"), value, key)
    ]
    assert found == []


def _merged(names: list[str]) -> list[str]:
    """``names`` with each run of one kind of delta counted once."""
    return [
        name
        for index, name in enumerate(names)
        if not (name.endswith("_delta") and index and names[index - 1] == name)
    ]


def test_every_deliberate_difference_is_named_once() -> None:
    text = Path(__file__).read_text()
    for key in DELIBERATE:
        assert f'# "{key}"' in text or f'"{key}"' in text.split("DELIBERATE", 2)[2]
