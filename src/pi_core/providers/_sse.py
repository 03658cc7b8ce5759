"""Server-sent events read from a response body, with a bound on what is held in memory.

The decoding follows the WHATWG event stream rules as httpx-sse applies them (lines end in
``\\r\\n``, ``\\n`` or ``\\r``; ``data`` lines join with ``\\n``; comments start with ``:``; one
space after the colon is dropped), and yields httpx-sse's :class:`ServerSentEvent`. What differs
is the bound: a line, or the data of one event, longer than :data:`MAX_SSE_LINE_BYTES` ends the
stream with :class:`SSELimitExceeded` instead of growing without end (a server sending a 100 MB
line, or a gzip bomb whose body decompresses to gigabytes). What stays in memory is then at
most that much, plus one decoded chunk: httpx decompresses each chunk of at most 64 KiB it
reads, so one chunk of a gzip bomb decodes to at most about 64 MiB.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from httpx_sse import ServerSentEvent

from .._http import MAX_LINE_BYTES, discard

__all__ = ["MAX_SSE_LINE_BYTES", "SSELimitExceeded", "aiter_sse"]

MAX_SSE_LINE_BYTES = MAX_LINE_BYTES


class SSELimitExceeded(Exception):
    """A line or an event of the stream is longer than the limit."""


class _Event:
    """The fields of the event being read."""

    __slots__ = ("data", "event", "id", "retry", "size")

    def __init__(self, last_id: str = "") -> None:
        self.data: list[str] = []
        self.size = 0
        self.event = ""
        self.id = last_id  # the last event id carries over, as the rules say
        self.retry: int | None = None

    def is_empty(self) -> bool:
        return not (self.data or self.event or self.id or self.retry is not None)

    def build(self) -> ServerSentEvent:
        return ServerSentEvent(self.event or "message", "\n".join(self.data), self.id, self.retry)


async def aiter_sse(
    chunks: AsyncIterator[bytes], limit: int = MAX_SSE_LINE_BYTES
) -> AsyncIterator[ServerSentEvent]:
    """The events of a body read as ``chunks`` (decoded bytes).

    Raises:
        SSELimitExceeded: a line or one event's data is longer than ``limit`` bytes.
    """
    decoder = _Decoder(limit)
    try:
        async for chunk in chunks:
            for event in decoder.feed(chunk):
                yield event
        for event in decoder.finish():
            yield event
    finally:
        # An error or an early close leaves the body iterator suspended, and httpx's iterators
        # under it: finish them all now, not when the garbage collector finds them.
        await discard(chunks)


class _Decoder:
    """Bytes in, events out; holds at most one unfinished line and one unfinished event."""

    __slots__ = ("_buffer", "_event", "_limit")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._event = _Event()

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events completed by ``chunk``."""
        buffer = self._buffer
        scan = max(0, len(buffer) - 1)  # what is left holds no line end, bar a trailing \r
        buffer += chunk
        start = 0
        events: list[ServerSentEvent] = []
        while (end := _line_end(buffer, scan)) >= 0:
            self._line(buffer[start:end].decode("utf-8", "replace"), events)
            start = scan = end + (2 if buffer[end : end + 2] == b"\r\n" else 1)
        del buffer[:start]
        if len(buffer) > self._limit:
            raise SSELimitExceeded(f"A line of the event stream is longer than {self._limit} bytes")
        return events

    def finish(self) -> list[ServerSentEvent]:
        """The events the end of the body completes: a last ``\\r`` ends its line. An event
        without its blank line is dropped, as the rules (and httpx-sse) do."""
        events: list[ServerSentEvent] = []
        if self._buffer.endswith(b"\r"):
            self._line(self._buffer[:-1].decode("utf-8", "replace"), events)
        return events

    def _line(self, line: str, events: list[ServerSentEvent]) -> None:
        if line:
            _read_field(self._event, line, self._limit)
            return
        if not self._event.is_empty():
            events.append(self._event.build())
        self._event = _Event(self._event.id)


def _line_end(buffer: bytearray, start: int) -> int:
    """The index of the next ``\\n`` or ``\\r`` at or after ``start``, or -1.

    A ``\\r`` at the very end may be the first half of ``\\r\\n``: it waits for more data.
    """
    newline = buffer.find(b"\n", start)
    carriage = buffer.find(b"\r", start, newline if newline >= 0 else len(buffer))
    if carriage < 0:
        return newline
    if carriage == len(buffer) - 1:
        return -1
    return carriage


def _read_field(event: _Event, line: str, limit: int) -> None:
    if line.startswith(":"):
        return  # a comment (keep-alive)
    name, _, value = line.partition(":")
    value = value.removeprefix(" ")
    if name == "data":
        event.size += len(value) + 1
        if event.size > limit:
            raise SSELimitExceeded(f"An event of the event stream is longer than {limit} bytes")
        event.data.append(value)
    elif name == "event":
        event.event = value
    elif name == "id" and "\0" not in value:
        event.id = value
    elif name == "retry" and value.isdigit():
        event.retry = int(value)
