"""One run streamed as an HTTP response, whatever the protocol: :class:`RunResponse`.

The response owns a task group holding both the run and the streaming of its events: a listener
subscribed for the run encodes each event and awaits its send into a small memory stream that the
response reads, so a slow client slows the run instead of letting events pile up. The run's end
closes the stream (after the protocol's closing events); the client going away cancels the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from starlette.requests import ClientDisconnect
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from .. import Agent, AgentEvent, RunResult
from ..lowlevel import exception_text
from ..nursery import AbortSignal
from ._redaction import public_text

__all__ = ["BUFFER_SIZE", "CLOSE_OUT_SECONDS", "STREAM_HEADERS", "RunEncoder", "RunResponse"]

BUFFER_SIZE = 16
"""How many encoded events wait for a slow client before the run waits for it."""
CLOSE_OUT_SECONDS = 10.0
"""How long a run whose client left may take to close out after its abort, before it is
cancelled."""
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""No cache may keep the stream, and no proxy (nginx) may buffer it."""


class RunEncoder(Protocol):
    """A protocol's view of one run: its opening, each event, its end."""

    def opening(self) -> list[bytes]:
        """What the stream starts with."""

    def encode(self, event: AgentEvent) -> list[bytes]:
        """The protocol's chunks of one agent event."""

    def finished(self, result: RunResult) -> list[bytes]:
        """What the stream ends with after the run returned ``result``."""

    def failed(self, message: str) -> list[bytes]:
        """What the stream ends with after the run raised (``message`` is redacted)."""


class RunResponse(Response):
    """A streamed response that runs ``start()`` on ``agent`` while it sends its events.

    A Response subclass, so that FastAPI passes it through as it is.
    """

    def __init__(
        self,
        agent: Agent,
        start: Callable[[], Awaitable[RunResult]],
        encoder: RunEncoder,
        media_type: str = "text/event-stream",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(media_type=media_type, headers={**STREAM_HEADERS, **(headers or {})})
        self.agent = agent
        self.start = start
        self.encoder = encoder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks_in, chunks_out = anyio.create_memory_object_stream[bytes](BUFFER_SIZE)
        ended = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._run, chunks_in, ended)
            stream = StreamingResponse(chunks_out, self.status_code, background=self.background)
            stream.raw_headers = [h for h in self.raw_headers if h[0] != b"content-length"]
            try:
                await stream(scope, receive, send)
            except (ClientDisconnect, OSError):
                pass  # the client is gone: nobody is left to tell
            finally:
                chunks_out.close()  # the run's sends are dropped from now on
            if not ended.is_set():
                # The client left mid-run: abort it, so that its transcript closes out (every
                # call answered) and the Agent can go on, then stop waiting for it.
                self.agent.abort()
                with anyio.move_on_after(CLOSE_OUT_SECONDS):
                    await ended.wait()
            tg.cancel_scope.cancel()

    async def _run(self, chunks: MemoryObjectSendStream[bytes], ended: anyio.Event) -> None:
        encoder = self.encoder

        async def send_all(parts: list[bytes]) -> None:
            try:
                for part in parts:
                    await chunks.send(part)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client has gone: the run closes out without it

        async def forward(event: AgentEvent, signal: AbortSignal) -> None:
            await send_all(encoder.encode(event))

        try:
            async with chunks:  # closing it ends the response
                await send_all(encoder.opening())
                unsubscribe = self.agent.subscribe(forward)
                try:
                    result = await self.start()
                except Exception as exc:  # a refused start (a busy agent, pending calls …)
                    closing = encoder.failed(public_text(exception_text(exc)))
                else:
                    closing = encoder.finished(result)
                finally:
                    unsubscribe()
                await send_all(closing)
        finally:
            ended.set()
