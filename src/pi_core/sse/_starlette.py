"""The Starlette response of :func:`~pi_core.sse.agent_events_response` (imported when called)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from .. import Agent, AgentEvent, AgentMessage
from ..nursery import AbortSignal
from ._response import sse_data

__all__ = ["AgentEventsResponse"]

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""No cache may keep the stream, and no proxy (nginx) may buffer it."""


class AgentEventsResponse(Response):
    """The events of one run of ``agent`` as Server-Sent Events.

    A Response subclass, so that FastAPI passes it through as it is. It owns a task group holding
    both the run and the streaming response: whichever ends first ends the other.
    """

    def __init__(
        self,
        agent: Agent,
        prompt: str | AgentMessage | Sequence[AgentMessage],
        buffer_size: int,
    ) -> None:
        super().__init__(media_type="text/event-stream", headers=HEADERS)
        self.agent = agent
        self.prompt = prompt
        self.buffer_size = buffer_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        events_in, events_out = anyio.create_memory_object_stream[str](self.buffer_size)
        async with events_out, anyio.create_task_group() as tg:
            tg.start_soon(self._run, events_in)
            stream = StreamingResponse(events_out, self.status_code, background=self.background)
            # The headers set on this response (cookies …) go out, without its empty body's length.
            stream.raw_headers = [h for h in self.raw_headers if h[0] != b"content-length"]
            await stream(scope, receive, send)
            # The response is over: the run has ended, or the client is gone and it must stop.
            tg.cancel_scope.cancel()

    async def _run(self, events: MemoryObjectSendStream[str]) -> None:
        async def forward(event: AgentEvent, signal: AbortSignal) -> None:
            await events.send(sse_data(event))

        unsubscribe = self.agent.subscribe(forward)
        try:
            async with events:  # closing it ends the response
                await self.agent.prompt(self.prompt)
        finally:
            unsubscribe()  # the agent goes on with the conversation's next request
