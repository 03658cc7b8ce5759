"""The durable runs on the page: list them, follow one from any offset, act on it.

A run's events are read from the database (``DurableRuns.timed_events``) and sent as AG-UI
events, each stamped with the time the run recorded for it, so that a run followed long after it
ran still draws its tool calls where they ran. Each Server-Sent Event carries the run's offset as
its ``id``: the page passes the last one back as ``after`` to resume.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .. import AgentEvent, AgentMessage, PendingToolCall
from ..lowlevel import exception_text
from ._ag_ui_events import AgUiMapper
from ._ag_ui_stream import sse_event
from ._http import Refused, error_response, read_json
from ._redaction import public_text
from ._response import BUFFER_SIZE, STREAM_HEADERS

__all__ = ["DurableView", "RunsClient"]


class RunsClient(Protocol):
    """What the page uses of :class:`~pi_core.durable.DurableRuns`."""

    async def list_runs(self) -> Sequence[Any]: ...

    async def status(self, run_id: str) -> Any: ...

    def timed_events(
        self, run_id: str, *, after: int = -1
    ) -> AsyncIterator[tuple[int, int | None, AgentEvent]]: ...

    async def steer(self, run_id: str, message: AgentMessage | str) -> None: ...

    async def follow_up(self, run_id: str, message: AgentMessage | str) -> None: ...

    async def abort(self, run_id: str) -> None: ...

    async def stop(self, run_id: str, *, grace: float | None = None) -> None: ...

    async def pending(self, run_id: str) -> Sequence[PendingToolCall]: ...

    async def approve(self, run_id: str, tool_call_id: str) -> None: ...

    async def deny(self, run_id: str, tool_call_id: str, reason: str | None = None) -> None: ...


WAITING_POLL_SECONDS = 0.5
"""How often a followed run's status is read, to show the calls it comes to wait for."""


class DurableView:
    """The routes of the durable runs."""

    def __init__(self, runs: RunsClient, max_body_bytes: int) -> None:
        self.runs = runs
        self.max_body_bytes = max_body_bytes

    def routes(self) -> list[Route]:
        return [
            Route("/api/runs", self.list_runs, methods=["GET"]),
            Route("/api/runs/{run_id}/events", self.events, methods=["GET"]),
            Route("/api/runs/{run_id}/pending", self.pending, methods=["GET"]),
            Route("/api/runs/{run_id}/{action}", self.act, methods=["POST"]),
        ]

    async def list_runs(self, request: Request) -> Response:
        try:
            statuses = await self.runs.list_runs()
        except Exception as exc:
            return _failure(exc)
        newest_first = sorted(statuses, key=lambda s: s.created_at, reverse=True)
        return JSONResponse([_status_json(status) for status in newest_first])

    async def pending(self, request: Request) -> Response:
        try:
            calls = await self.runs.pending(request.path_params["run_id"])
        except Exception as exc:
            return _failure(exc)
        return JSONResponse([_pending_json(call) for call in calls])

    async def events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        after = request.query_params.get("after", "-1")
        if not after.lstrip("-").isdigit():
            return error_response(422, "after must be an integer offset")
        try:
            status = await self.runs.status(run_id)
        except Exception as exc:
            return _failure(exc)
        return _RunEventsResponse(self.runs, run_id, int(after), status.agent)

    async def act(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        action = request.path_params["action"]
        try:
            body = await read_json(request, self.max_body_bytes)
            await self._act(run_id, action, body if isinstance(body, dict) else {})
        except Refused as error:
            return error_response(error.status, error.message)
        except Exception as exc:
            return _failure(exc)
        return JSONResponse({"ok": True})

    async def _act(self, run_id: str, action: str, body: dict[str, Any]) -> None:
        text, call_id = body.get("text"), body.get("toolCallId")
        if action in ("steer", "follow_up"):
            if not isinstance(text, str) or not text.strip():
                raise Refused(422, 'Send {"text": "..."}')
            send = self.runs.steer if action == "steer" else self.runs.follow_up
            await send(run_id, text)
        elif action == "abort":
            await self.runs.abort(run_id)
        elif action == "stop":
            grace = body.get("grace")
            await self.runs.stop(run_id, grace=grace if isinstance(grace, (int, float)) else None)
        elif action in ("approve", "deny"):
            if not isinstance(call_id, str):
                raise Refused(422, 'Send {"toolCallId": "..."}')
            if action == "approve":
                await self.runs.approve(run_id, call_id)
            else:
                reason = body.get("reason")
                await self.runs.deny(run_id, call_id, reason if isinstance(reason, str) else None)
        else:
            raise Refused(404, f"No action {action!r}")


class _RunEventsResponse(Response):
    """A durable run's events from an offset on, as AG-UI Server-Sent Events."""

    def __init__(self, runs: RunsClient, run_id: str, after: int, agent: str) -> None:
        super().__init__(media_type="text/event-stream", headers=STREAM_HEADERS)
        self.runs = runs
        self.run_id = run_id
        self.after = after
        self.agent = agent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks_in, chunks_out = anyio.create_memory_object_stream[bytes](BUFFER_SIZE)
        async with chunks_out, anyio.create_task_group() as tg:
            tg.start_soon(self._read, chunks_in)
            stream = StreamingResponse(chunks_out, self.status_code)
            stream.raw_headers = [h for h in self.raw_headers if h[0] != b"content-length"]
            await stream(scope, receive, send)
            tg.cancel_scope.cancel()  # the client is gone: stop reading

    async def _read(self, chunks: MemoryObjectSendStream[bytes]) -> None:
        mapper = AgUiMapper(self.agent, self.run_id, echo_prompt=True)
        announced: set[str] = set()
        async with chunks:
            await chunks.send(sse_event(mapper.run_started()))
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._announce_waiting_calls, mapper, chunks, announced)
                    async for offset, at_ms, event in self.runs.timed_events(
                        self.run_id, after=self.after
                    ):
                        for mapped in mapper.map(event, at_ms):
                            await chunks.send(f"id: {offset}\n".encode() + sse_event(mapped))
                    tg.cancel_scope.cancel()
                closing = await self._closing(mapper, announced)
            except Exception as exc:
                closing = [mapper.run_error(public_text(exception_text(exc)))]
            for mapped in closing:
                await chunks.send(sse_event(mapped))

    async def _announce_waiting_calls(
        self, mapper: AgUiMapper, chunks: MemoryObjectSendStream[bytes], announced: set[str]
    ) -> None:
        """While the run is followed, each call it comes to wait for, once: a waiting run's event
        stream stays open (the run goes on once decided), so the wait is read from its status."""
        while True:
            if (await self.runs.status(self.run_id)).state == "waiting":
                calls = await self.runs.pending(self.run_id)
                new = [call for call in calls if call.tool_call_id not in announced]
                announced.update(call.tool_call_id for call in new)
                for mapped in mapper.pending_approvals(new):
                    await chunks.send(sse_event(mapped))
            await anyio.sleep(WAITING_POLL_SECONDS)

    async def _closing(self, mapper: AgUiMapper, announced: set[str]) -> list[Any]:
        """How the run stands now that its events (so far) are read."""
        status = await self.runs.status(self.run_id)
        if status.state == "waiting":
            calls = await self.runs.pending(self.run_id)
            return mapper.run_finished(
                pending=[call for call in calls if call.tool_call_id not in announced]
            )
        if status.state in ("error", "cancelled"):
            return [mapper.run_error(mapper.error or f"the run ended: {status.state}")]
        if mapper.error is not None:
            return [mapper.run_error(mapper.error)]
        return mapper.run_finished()


def _status_json(status: Any) -> dict[str, Any]:
    return {
        "runId": status.run_id,
        "agent": status.agent,
        "state": str(status.state),
        "executorId": status.executor_id,
        "createdAt": status.created_at,
    }


def _pending_json(call: Any) -> dict[str, Any]:
    return {
        "toolCallId": call.tool_call_id,
        "toolName": call.tool_name,
        "args": call.args,
        "reason": call.reason,
    }


def _failure(exc: Exception) -> Response:
    status = 404 if isinstance(exc, LookupError) else 500  # UnknownRunError is a LookupError
    return error_response(status, public_text(exception_text(exc)))
