"""Helpers of the proxy tests: a real hypercorn server, wire bodies, mock HTTP, protocol checks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import httpx

from asgi_server import App, serve_on_localhost
from pi_core import (
    AssistantMessage,
    AssistantMessageEvent,
    StreamDone,
    StreamError,
    StreamStart,
)

__all__ = [
    "STREAM_DEADLINE",
    "ChunkStream",
    "check_protocol",
    "collect",
    "final_message",
    "kinds",
    "serve_app",
    "wire",
    "wire_line",
]

STREAM_DEADLINE = 10.0
"""No stream of these tests may take longer: a hang fails instead of blocking the suite."""


def wire_line(payload: object) -> bytes:
    """One wire event: ``data: <json>`` and the blank line after it."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def wire(*payloads: object) -> bytes:
    """A response body of wire events."""
    return b"".join(wire_line(payload) for payload in payloads)


class ChunkStream(httpx.AsyncByteStream):
    """A response body sent in the given chunks; with ``hang``, it then waits until cancelled.

    ``closed`` is set when httpx closes it (the client gave the body up or finished it).
    """

    def __init__(self, chunks: Iterable[bytes], *, hang: bool = False) -> None:
        self.chunks = list(chunks)
        self.hang = hang
        self.closed = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            await anyio.lowlevel.checkpoint()
            yield chunk
        if self.hang:
            await anyio.sleep_forever()

    async def aclose(self) -> None:
        self.closed.set()


async def collect(
    stream: AsyncIterable[AssistantMessageEvent],
    on_event: Callable[[AssistantMessageEvent], object] | None = None,
) -> list[AssistantMessageEvent]:
    """Every event of ``stream`` (bounded by :data:`STREAM_DEADLINE`), protocol-checked.

    ``on_event`` sees each event while its ``partial`` is current.
    """
    events: list[AssistantMessageEvent] = []
    with anyio.fail_after(STREAM_DEADLINE):
        async for event in stream:
            events.append(event)
            if on_event is not None:
                on_event(event)
    check_protocol(events)
    return events


def check_protocol(events: Sequence[AssistantMessageEvent]) -> None:
    """``start`` first (unless the stream is a lone terminal event), exactly one terminal, last."""
    assert events, "a stream has at least its terminal event"
    *body, last = events
    assert isinstance(last, StreamDone | StreamError), f"the last event is {last.type}"
    assert not any(isinstance(event, StreamDone | StreamError) for event in body)
    if body:
        assert isinstance(body[0], StreamStart), f"the first event is {body[0].type}"
        assert not any(isinstance(event, StreamStart) for event in body[1:])


def kinds(events: Sequence[AssistantMessageEvent]) -> list[str]:
    """The ``type`` strings of ``events``."""
    return [event.type for event in events]


def final_message(events: Sequence[AssistantMessageEvent]) -> AssistantMessage:
    """The message of the terminal event."""
    last = events[-1]
    assert isinstance(last, StreamDone | StreamError)
    return last.message if isinstance(last, StreamDone) else last.error


@asynccontextmanager
async def serve_app(app: App, backend: str) -> AsyncIterator[str]:
    """Serve ``app`` with hypercorn on 127.0.0.1 (a free port) on ``backend``; yields its URL.

    The socket listens before the server task starts, and the server has answered a first
    request before the URL is handed out. On exit the server shuts down.
    """
    async with serve_on_localhost(app, backend) as url:
        await _wait_until_serving(url)
        yield url


async def _wait_until_serving(url: str) -> None:
    with anyio.fail_after(STREAM_DEADLINE):
        async with httpx.AsyncClient() as client:
            await client.get(f"{url}/ready")  # any answer (a 404) means it serves
