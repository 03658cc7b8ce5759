"""What OpenAI-compatible servers really send: doubled reasoning fields, split surrogate pairs,
tool arguments that are not quite JSON, usage in every dialect, failed finish reasons.

Each case is replayed by a real server on 127.0.0.1 with its bytes cut at awkward places (inside
a UTF-8 character, inside a JSON string, between ``\\r`` and ``\\n``), on both backends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _replay_server import Reply, open_replay_server
from _stream_checks import check_protocol, collect, final_message, kinds

from pi_core import (
    Context,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    UserMessage,
)
from pi_core.providers import openai

pytestmark = pytest.mark.anyio

CONTEXT = Context(None, [UserMessage("Hi")])
COST = ModelCost(input=1.0, output=2.0, cache_read=0.5, cache_write=4.0)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish, **extra}
    return json.dumps({"id": "c1", "choices": [choice]}).encode()


def usage(**fields: Any) -> bytes:
    return json.dumps({"id": "c1", "choices": [], "usage": fields}).encode()


def awkward(*payloads: bytes, step: int = 7) -> list[bytes]:
    """The SSE body for ``payloads`` (CRLF line ends, then ``[DONE]``), cut every ``step`` bytes."""
    body = b"".join(b"data: " + payload + b"\r\n\r\n" for payload in (*payloads, b"[DONE]"))
    return [body[i : i + step] for i in range(0, len(body), step)]


async def replay(chunks: list[bytes], backend: str) -> list[Any]:
    async with open_replay_server([Reply(200, chunks)], backend) as server:
        model = Model(
            "m", api="openai-completions", provider="local", base_url=server.base_url, cost=COST
        )
        events = await collect(openai.stream_openai(model, CONTEXT, StreamOptions(api_key="k")))
    check_protocol(events)
    return events


# --- reasoning ------------------------------------------------------------------------------------


async def test_reasoning_sent_under_two_names_is_taken_once(anyio_backend: str) -> None:
    events = await replay(
        awkward(
            chunk({"reasoning_content": "Let me", "reasoning": "Let me"}),
            chunk({"reasoning": " think", "reasoning_content": ""}),
            chunk({"content": "Done."}, "stop"),
        ),
        anyio_backend,
    )
    message = final_message(events)
    assert message.content == [
        ThinkingContent("Let me think", "reasoning_content"),
        TextContent("Done."),
    ]
    assert [e.delta for e in events if isinstance(e, ThinkingDelta)] == ["Let me", " think"]


async def test_reasoning_text_is_read(anyio_backend: str) -> None:
    events = await replay(
        awkward(chunk({"reasoning_text": "Hmm."}), chunk({}, "stop")), anyio_backend
    )
    assert final_message(events).content == [ThinkingContent("Hmm.", "reasoning_text")]


# --- split surrogate pairs ------------------------------------------------------------------------


async def test_a_surrogate_pair_split_between_deltas_is_one_character(anyio_backend: str) -> None:
    # json.dumps writes the halves as \ud83d and \ude00: two JSON strings, two lone halves.
    events = await replay(
        awkward(
            chunk({"reasoning_content": "think \ud83d"}),
            chunk({"reasoning_content": "\ude00!"}),
            chunk({"content": "smile \ud83d"}),
            chunk({"content": "\ude00"}),
            chunk({}, "stop"),
            step=5,
        ),
        anyio_backend,
    )
    message = final_message(events)
    assert message.content == [
        ThinkingContent("think 😀!", "reasoning_content"),
        TextContent("smile 😀"),
    ]
    text = message.content[1]
    assert isinstance(text, TextContent) and text.text.encode("utf-8") == "smile 😀".encode()
    deltas = "".join(e.delta for e in events if e.type == "text_delta")
    assert deltas == "smile 😀"


# --- tool arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"cmd": "ls\n-la", "sep": "a\tb"}', {"cmd": "ls\n-la", "sep": "a\tb"}),
        ('{"pattern": "\\d+\\.\\w", "n": 2}', {"pattern": "\\d+\\.\\w", "n": 2}),
        ('{"path": "C:\\Users\\me"}', {"path": "C:\\Users\\me"}),
    ],
)
async def test_arguments_that_are_not_quite_json_are_repaired(
    anyio_backend: str, raw: str, expected: dict[str, Any]
) -> None:
    fragments = [raw[:9], raw[9:20], raw[20:]]
    first = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "run", "arguments": ""},
    }
    calls = [chunk({"tool_calls": [first]})]
    calls += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}) for part in fragments
    ]
    events = await replay(awkward(*calls, chunk({}, "tool_calls")), anyio_backend)
    assert final_message(events).content == [ToolCall("call_1", "run", expected)]


async def test_truncated_arguments_never_reach_a_tool(anyio_backend: str) -> None:
    first = {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "rm", "arguments": '{"force": true, "path": "/home/me/pro'}}  # fmt: skip
    events = await replay(
        awkward(chunk({"tool_calls": [first]}), chunk({}, "length")), anyio_backend
    )
    (call,) = final_message(events).content
    assert isinstance(call, ToolCall) and call.arguments == {} and call.arguments_error


# --- usage dialects -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "counts"),
    [
        # OpenAI: cached tokens are part of prompt_tokens
        ({"prompt_tokens": 100, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 60}},
         (40, 10, 60, 0)),
        # DeepSeek: hits and misses
        ({"prompt_tokens": 100, "completion_tokens": 10, "prompt_cache_hit_tokens": 70,
          "prompt_cache_miss_tokens": 30}, (30, 10, 70, 0)),
        # OpenRouter: writes counted in cached_tokens too
        ({"prompt_tokens": 100, "completion_tokens": 10,
          "prompt_tokens_details": {"cached_tokens": 50, "cache_write_tokens": 20}}, (30, 10, 50, 20)),
    ],
)  # fmt: skip
async def test_usage_dialects(
    anyio_backend: str, fields: dict[str, Any], counts: tuple[int, int, int, int]
) -> None:
    events = await replay(awkward(chunk({"content": "x"}, "stop"), usage(**fields)), anyio_backend)
    got = final_message(events).usage
    assert (got.input, got.output, got.cache_read, got.cache_write) == counts
    assert got.total_tokens == sum(counts)
    expected_cost = (counts[0] * 1.0 + counts[1] * 2.0 + counts[2] * 0.5 + counts[3] * 4.0) / 1e6
    assert got.cost.total == pytest.approx(expected_cost)


async def test_usage_inside_the_choice(anyio_backend: str) -> None:
    moonshot = chunk({"content": "x"}, "stop", usage={"prompt_tokens": 12, "completion_tokens": 3})
    events = await replay(awkward(moonshot), anyio_backend)
    got = final_message(events).usage
    assert (got.input, got.output) == (12, 3)


# --- finish reasons -------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["network_error", "error", "upstream_error", "timeout"])
async def test_failed_finish_reasons_end_in_error(anyio_backend: str, reason: str) -> None:
    events = await replay(awkward(chunk({"content": "partial"}), chunk({}, reason)), anyio_backend)
    assert kinds(events)[-1] == "error"
    message = final_message(events)
    assert message.error_message == f"Provider finish_reason: {reason}"
    assert message.content == [TextContent("partial")]


@pytest.mark.parametrize("reason", ["eos", "end", "stop_sequence"])
async def test_unknown_benign_finish_reasons_are_a_stop(anyio_backend: str, reason: str) -> None:
    events = await replay(awkward(chunk({"content": "ok"}), chunk({}, reason)), anyio_backend)
    assert kinds(events)[-1] == "done" and final_message(events).stop_reason == "stop"
