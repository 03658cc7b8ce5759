"""Property tests of the wire format: encoding then decoding gives the reply back, however the
body is cut into chunks, and no bytes at all can make the client raise or hang."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest
from _proxy_support import ChunkStream, collect, final_message, wire_line
from hypothesis import given
from hypothesis import strategies as st

from pi_core import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamDone,
    StreamError,
    StreamStart,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingContent,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageCost,
    UserMessage,
)
from pi_core.proxy import stream_proxy
from pi_core.proxy._decode import WireDecoder
from pi_core.proxy._wire import WireEncoder
from pi_core.serialization import to_dict

pytestmark = pytest.mark.anyio

MODEL = Model("m", api="a", provider="p")
CONTEXT = Context(None, [UserMessage("hi", timestamp=1)])

# No lone surrogates: the server replaces them (they cannot be UTF-8), so they do not round-trip.
texts = st.text(st.characters(codec="utf-8"), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
signatures = st.none() | st.text(st.characters(codec="ascii"), min_size=1, max_size=10)
blocks = st.one_of(
    st.builds(TextContent, texts, signatures),
    st.builds(ThinkingContent, texts, signatures),
    st.builds(ToolCall, texts, texts, st.dictionaries(texts, json_values, max_size=4)),
)
usages = st.builds(
    Usage,
    *[st.integers(0, 10**6)] * 5,
    st.builds(UsageCost, *[st.floats(0, 10, allow_nan=False)] * 5),
)


@st.composite
def replies(draw: st.DrawFn) -> AssistantMessage:
    """A finished reply: blocks, usage, and how it stopped."""
    reason = draw(st.sampled_from(["stop", "length", "toolUse", "error", "aborted"]))
    error = draw(texts) if reason in ("error", "aborted") else None
    content = draw(st.lists(blocks, max_size=4))
    return AssistantMessage(content, "a", "p", "m", draw(usages), reason, error)  # type: ignore[arg-type]


def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=4)) | {0, len(text)})
    return [text[start:end] for start, end in itertools.pairwise(cuts)]


@st.composite
def provider_events(draw: st.DrawFn) -> tuple[AssistantMessage, list[AssistantMessageEvent]]:
    """A reply and the provider events that stream it, deltas cut at random places."""
    final = draw(replies())
    partial = AssistantMessage([], "a", "p", "m")
    events: list[AssistantMessageEvent] = [StreamStart(partial)]
    for index, block in enumerate(final.content):
        partial.content.append(block)
        if isinstance(block, TextContent):
            events += [TextStart(index, partial)]
            events += [TextDelta(index, piece, partial) for piece in _pieces(draw, block.text)]
            events += [TextEnd(index, block.text, partial)]
        elif isinstance(block, ThinkingContent):
            events += [ThinkingStart(index, partial)]
            pieces = _pieces(draw, block.thinking)
            events += [ThinkingDelta(index, piece, partial) for piece in pieces]
            events += [ThinkingEnd(index, block.thinking, partial)]
        else:
            events += [ToolCallStart(index, partial)]
            if draw(st.booleans()):  # streamed, or given whole (the encoder then sends it)
                arguments = json.dumps(block.arguments)
                pieces = _pieces(draw, arguments)
                events += [ToolCallDelta(index, piece, partial) for piece in pieces]
            events += [ToolCallEnd(index, block, partial)]
    partial.usage = final.usage
    partial.stop_reason, partial.error_message = final.stop_reason, final.error_message
    if final.stop_reason in ("error", "aborted"):
        events.append(StreamError(final.stop_reason, partial))
    else:
        events.append(StreamDone(final.stop_reason, partial))  # type: ignore[arg-type]
    return final, events


def encode(events: list[AssistantMessageEvent]) -> bytes:
    encoder = WireEncoder()
    return b"".join(encoder.encode(event) for event in events)


def split(body: bytes, cuts: set[int]) -> list[bytes]:
    points = sorted({0, len(body)} | {cut for cut in cuts if cut < len(body)})
    return [body[start:end] for start, end in itertools.pairwise(points)]


def decode(chunks: list[bytes]) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """The events (without their partial) and the final message, fed chunk by chunk."""
    decoder = WireDecoder(MODEL)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    assert decoder.terminal is events[-1]
    message = to_dict(decoder.partial)
    del message["timestamp"]
    return [_fields(event) for event in events], message


def _fields(event: AssistantMessageEvent) -> tuple[Any, ...]:
    return (
        event.type,
        getattr(event, "content_index", None),
        getattr(event, "delta", None),
        getattr(event, "content", None),
    )


def _comparable(message: AssistantMessage) -> dict[str, Any]:
    data = to_dict(message)
    del data["timestamp"]
    return data


@given(provider_events(), st.sets(st.integers(0, 10_000), max_size=30))
def test_a_reply_survives_the_wire_however_the_body_is_cut(
    reply: tuple[AssistantMessage, list[AssistantMessageEvent]], cuts: set[int]
) -> None:
    final, events = reply
    body = encode(events)
    whole_events, whole_message = decode([body])
    assert whole_message == _comparable(final)
    assert decode(split(body, cuts)) == (whole_events, whole_message)
    assert decode([bytes([byte]) for byte in body]) == (whole_events, whole_message)


async def run_body(chunks: list[bytes]) -> list[AssistantMessageEvent]:
    stream = ChunkStream(chunks)
    transport = httpx.MockTransport(lambda _: httpx.Response(200, stream=stream))
    async with httpx.AsyncClient(transport=transport) as client:
        events = stream_proxy(MODEL, CONTEXT, proxy_url="http://p", auth_token="t", client=client)
        return await collect(events)  # protocol-checked: one terminal event, last


@given(provider_events(), st.sets(st.integers(0, 10_000), max_size=30))
async def test_stream_proxy_reads_a_cut_body_like_a_whole_one(
    reply: tuple[AssistantMessage, list[AssistantMessageEvent]], cuts: set[int]
) -> None:
    final, events = reply
    body = encode(events)
    received = await run_body(split(body, cuts))
    assert _comparable(final_message(received)) == _comparable(final)
    assert [_fields(event) for event in received] == decode([body])[0]


line_parts = st.one_of(
    st.binary(max_size=30),
    st.sampled_from(
        [
            b"\n",
            b"data: ",
            b"data: {}\n",
            b"data: null\n",
            b'data: {"type": "start"}\n',
            b'data: {"type": "text_start", "contentIndex": 0}\n',
            b'data: {"type": "text_delta", "contentIndex": 0, "delta": "x"}\n',
            b'data: {"type": "toolcall_start", "contentIndex": 0, "id": "i", "toolName": "t"}\n',
            b'data: {"type": "toolcall_delta", "contentIndex": 0, "delta": "{\\"a\\": [1, "}\n',
            b'data: {"type": "toolcall_end", "contentIndex": 0}\n',
            b'data: {"type": "done", "reason": "stop", "usage": {}}\n',
            b'data: {"type": "error", "reason": "error"}\n',
            b"data: \xff\xfe\n",
            wire_line({"type": "text_start", "contentIndex": 1}),
        ]
    ),
)


@given(st.lists(line_parts, max_size=12), st.sets(st.integers(0, 500), max_size=10))
async def test_no_body_can_make_the_client_raise_or_hang(
    parts: list[bytes], cuts: set[int]
) -> None:
    events = await run_body(split(b"".join(parts), cuts))
    assert isinstance(events[-1], StreamDone | StreamError)  # and collect() checked the rest
