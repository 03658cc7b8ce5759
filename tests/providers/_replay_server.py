"""A real HTTP server on 127.0.0.1 that replays scripted responses, for provider tests.

hypercorn serves a tiny ASGI app on the test's own anyio backend (``hypercorn.asyncio`` or
``hypercorn.trio``). Each request takes the next :class:`Reply`: a status, body chunks sent one
by one, and an ending — ``"complete"`` finishes the body, ``"drop"`` closes the connection in the
middle of the body, ``"hold"`` keeps the response open until the client disconnects (and records
that it did, in :attr:`ReplayServer.disconnected`).
"""

from __future__ import annotations

import json
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    MutableMapping,
)
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import attrs
from _stream_checks import collect

from asgi_server import serve_on_localhost
from pi_core import AbortController, AbortSignal, AssistantMessageEvent, TextDelta

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

__all__ = [
    "RecordedRequest",
    "ReplayServer",
    "Reply",
    "abort_after_first_text_delta",
    "open_replay_server",
    "split_awkwardly",
    "sse_event",
]


def sse_event(data: object, event: str | None = None) -> bytes:
    """One server-sent event: an optional ``event:`` line and a ``data:`` line of JSON (or text)."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


@attrs.define
class Reply:
    """One scripted response."""

    status: int = 200
    chunks: Iterable[bytes] = attrs.Factory(list)
    """The body's pieces, sent one by one; a generator makes a body as large as a test needs."""
    content_type: str = "text/event-stream"
    ending: Literal["complete", "drop", "hold"] = "complete"
    headers: dict[str, str] = attrs.Factory(dict)
    """More response headers (``retry-after``, ``content-encoding`` …)."""


@attrs.define
class RecordedRequest:
    """What the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


Rule = Callable[[Any], "Reply | None"]
"""A server's rule on request bodies: the refusal it answers a body with, ``None`` to accept."""


class ReplayServer:
    """The ASGI app and what it saw; ``base_url`` is set once the server listens. A request that
    breaks ``rule`` is answered with the rule's refusal and takes no scripted reply."""

    def __init__(self, replies: list[Reply], rule: Rule | None = None) -> None:
        self.rule = rule
        self.replies = list(replies)
        self.requests: list[RecordedRequest] = []
        self.disconnected = anyio.Event()
        self.base_url = ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        self.requests.append(
            RecordedRequest(scope["method"], scope["path"], headers, json.loads(body or b"null"))
        )
        refusal = self.rule(self.requests[-1].body) if self.rule is not None else None
        if refusal is not None:
            reply = refusal
        else:
            reply = self.replies.pop(0) if self.replies else Reply(500, [b"no reply scripted"])
        content_type = reply.content_type.encode()
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [
                    (b"content-type", content_type),
                    *((name.encode(), value.encode()) for name, value in reply.headers.items()),
                ],
            }
        )
        for chunk in reply.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if reply.ending == "complete":
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        elif reply.ending == "hold":
            while (await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
        # "drop": returning with the body unfinished makes hypercorn close the connection.


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


@asynccontextmanager
async def open_replay_server(
    replies: list[Reply], backend: str, rule: Rule | None = None
) -> AsyncIterator[ReplayServer]:
    """Serve ``replies`` on 127.0.0.1 with hypercorn on ``backend`` ("asyncio" or "trio"),
    refusing the requests that break ``rule``.

    The socket listens before the server task starts, so a client may connect at once.
    """
    server = ReplayServer(replies, rule)
    async with serve_on_localhost(server, backend) as url:
        server.base_url = url
        yield server


async def abort_after_first_text_delta(
    chunks: list[bytes],
    backend: str,
    start: Callable[[str, AbortSignal], AsyncIterable[AssistantMessageEvent]],
) -> list[AssistantMessageEvent]:
    """Abort a stream in the middle of a held response, and see the client hang up.

    ``chunks`` are served, then the response is held open; ``start(base_url, signal)`` is the
    provider's stream against the server. Once its first ``TextDelta`` arrives (the client is
    then blocked reading the held response) the signal aborts, and this waits until the server
    sees the client disconnect.

    Returns:
        Every event of the stream.
    """
    controller = AbortController()
    first_delta = anyio.Event()
    events: list[AssistantMessageEvent] = []

    def note_delta(event: AssistantMessageEvent) -> None:
        if isinstance(event, TextDelta):
            first_delta.set()

    async def consume(base_url: str) -> None:
        events.extend(await collect(start(base_url, controller.signal), note_delta))

    async with open_replay_server([Reply(chunks=chunks, ending="hold")], backend) as server:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(consume, server.base_url)
                await first_delta.wait()
                controller.abort()
            await server.disconnected.wait()
    return events


def split_awkwardly(lines: list[bytes], sizes: tuple[int, ...]) -> list[bytes]:
    """The body of ``lines`` cut into chunks of the given sizes, in turn.

    Cuts fall wherever the sizes put them: inside a multi-byte UTF-8 character, between ``data``
    and its colon, between the two newlines that end an event, so a client that decodes per
    chunk, or expects whole lines or events per chunk, is caught out.
    """
    body = b"".join(lines)
    chunks: list[bytes] = []
    position = turn = 0
    while position < len(body):
        size = sizes[turn % len(sizes)]
        chunks.append(body[position : position + size])
        position += size
        turn += 1
    return chunks
