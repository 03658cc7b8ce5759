"""Bounded buffering: a huge SSE line, a gzip bomb in a stream or in an error body end the
request with a clear error instead of growing memory without end. That the failure is the one of
the limit (its message names it) is what shows the bound held; nothing here measures time."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from _replay_server import Reply, open_replay_server, sse_event
from _stream_checks import collect, final_message, kinds
from httpx_sse import EventSource
from hypothesis import given
from hypothesis import strategies as st

from pi_core import AssistantMessageEvent, Context, Model, StreamOptions, UserMessage
from pi_core.providers import openai
from pi_core.providers._sse import MAX_SSE_LINE_BYTES, SSELimitExceeded, aiter_sse

pytestmark = pytest.mark.anyio

CONTEXT = Context(None, [UserMessage("Hi")])
MIB = 1024 * 1024
LINE_LIMIT_TEXT = f"A line of the event stream is longer than {MAX_SSE_LINE_BYTES} bytes"


def model(base_url: str) -> Model:
    return Model("m", api="openai-completions", provider="local", base_url=base_url)


def huge_line(size: int) -> Iterator[bytes]:
    """``data: xxxx…`` of ``size`` bytes with no line end, made a MiB at a time."""
    block = b"x" * MIB
    yield sse_event({"choices": [{"index": 0, "delta": {"content": "start"}}]})
    yield b"data: "
    for _ in range(size // MIB):
        yield block


def gzip_bomb(
    decoded: int, prefix: bytes = b"", suffix: bytes = b"", filler: bytes = b"\0"
) -> Iterator[bytes]:
    """A gzip body: ``prefix``, ``decoded`` bytes of ``filler``, ``suffix``, compressed as it is
    sent (a MiB of one byte compresses to about a KiB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    yield compressor.compress(prefix)
    block = filler * MIB
    for _ in range(decoded // MIB):
        if piece := compressor.compress(block):
            yield piece
    yield compressor.compress(suffix) + compressor.flush()


async def run(reply: Reply, backend: str) -> list[AssistantMessageEvent]:
    async with open_replay_server([reply], backend) as server:
        options = StreamOptions(api_key="k", max_retries=0)
        return await collect(openai.stream_openai(model(server.base_url), CONTEXT, options))


async def test_a_100_mb_line_ends_the_stream_at_the_limit(anyio_backend: str) -> None:
    events = await run(Reply(200, huge_line(100 * MIB)), anyio_backend)
    assert kinds(events)[:3] == ["start", "text_start", "text_delta"]
    message = final_message(events)
    assert message.error_message == LINE_LIMIT_TEXT
    assert message.content[0].text == "start"  # type: ignore[union-attr]


async def test_a_gzip_bomb_in_the_stream_ends_at_the_limit(anyio_backend: str) -> None:
    bomb = gzip_bomb(96 * MIB, prefix=b"data: ")
    reply = Reply(200, bomb, headers={"content-encoding": "gzip"})
    events = await run(reply, anyio_backend)
    assert kinds(events) == ["start", "error"]
    assert final_message(events).error_message == LINE_LIMIT_TEXT


async def test_a_gzip_bomb_as_an_error_body_is_read_only_in_part(anyio_backend: str) -> None:
    # Whole, this is valid JSON whose message is 96 MiB long: read whole, it would become the
    # error text. Read only in part, it is no JSON, and the text is a clipped preview.
    bomb = gzip_bomb(96 * MIB, b'{"error": {"message": "', b'"}}', filler=b"x")
    reply = Reply(500, bomb, content_type="application/json", headers={"content-encoding": "gzip"})
    events = await run(reply, anyio_backend)
    assert kinds(events) == ["error"]
    text = final_message(events).error_message
    assert text is not None and text.startswith(
        '500 Internal Server Error: {"error": {"message": "xxx'
    )
    assert len(text) < 600


# --- the decoder -----------------------------------------------------------------------------------


async def chunks_of(body: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    points = sorted({0, *(cut % (len(body) + 1) for cut in cuts), len(body)})
    for start, end in itertools.pairwise(points):
        yield body[start:end]


async def decode(
    body: bytes, cuts: list[int], limit: int = MAX_SSE_LINE_BYTES
) -> list[tuple[str, str, str, int | None]]:
    return [(e.event, e.data, e.id, e.retry) async for e in aiter_sse(chunks_of(body, cuts), limit)]


LINES = st.sampled_from(
    ["data: a", "data:b", "data:  two spaces", "event: ping", "id: 7", "retry: 3000", ": keep-alive",
     "data: {\"x\": \"é\"}", "", "", "unknown: field", "data", "event:"]
)  # fmt: skip


@given(
    lines=st.lists(LINES, max_size=12),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
async def test_the_decoder_reads_what_httpx_sse_reads(
    lines: list[str], ending: str, cuts: list[int]
) -> None:
    body = ending.join([*lines, "", ""]).encode()
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    expected = [(e.event, e.data, e.id, e.retry) for e in EventSource(response).iter_sse()]
    assert await decode(body, cuts) == expected


async def test_an_event_of_too_many_data_lines_ends_at_the_limit() -> None:
    body = b"data: 0123456789\n" * 20
    with pytest.raises(SSELimitExceeded, match="An event of the event stream is longer than 100"):
        await decode(body, [5, 50, 77], limit=100)
    with pytest.raises(SSELimitExceeded, match="A line of the event stream is longer than 100"):
        await decode(b"data: " + b"y" * 200, [7, 90], limit=100)
