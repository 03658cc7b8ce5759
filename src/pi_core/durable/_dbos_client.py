"""The client of durable runs: start, steer, watch and stop runs from any process.

It needs no agent code. DBOS's client is synchronous; every call goes through a worker thread
(``anyio.to_thread``), so the client works under trio as well as asyncio.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import sqlalchemy.exc
from dbos import DBOSClient, EnqueueOptions
from dbos._error import DBOSNonExistentWorkflowError, DBOSStreamTimeoutError

from .. import (
    AgentEvent,
    AgentMessage,
    Approve,
    Decision,
    Deny,
    PendingToolCall,
    TextContent,
    UserMessage,
)
from ..lowlevel import given_output, now_ms
from ._dbos_approvals import abort_message, decision_message, decode_pending
from ._dbos_logs import engine_error_text
from ._dbos_names import (
    ABORT,
    AGENTS_WORKFLOW,
    COMPACTION_STEP,
    DECISION,
    EVENTS,
    FOLLOW_UP,
    PENDING,
    QUEUE,
    STEER,
    STOP,
    TRANSCRIPT,
    WORKFLOW,
    check_database_url,
    masked,
)
from ._dbos_retry import UNREACHABLE_AFTER, call_through_outages, is_missing_tables
from ._record import ENTRY_SPAN, Transcript, decode_events, decode_message, encode_message
from ._spec import (
    DurableError,
    RunFailedError,
    RunState,
    RunStatus,
    UnknownAgentError,
    UnknownRunError,
)

__all__ = ["DurableRuns"]

T = TypeVar("T")

_STATES: dict[str, RunState] = {
    "ENQUEUED": "pending",
    "DELAYED": "pending",
    "PENDING": "running",
    "SUCCESS": "success",
    "ERROR": "error",
    "CANCELLED": "cancelled",
}
_DBOS_STATES: dict[RunState, list[str]] = {}
for _dbos_state, _state in _STATES.items():
    _DBOS_STATES.setdefault(_state, []).append(_dbos_state)
_DBOS_STATES["waiting"] = _DBOS_STATES["running"]  # a running run with calls that wait
_ENDED = frozenset(("success", "error", "cancelled"))
_FINISHED = frozenset(("success", "error"))
"""The states no run leaves (a cancelled one can be resumed)."""

_RESULT_FIRST_POLL = 0.05
_RESULT_MAX_POLL = 0.5
"""How often result() looks whether the run has ended: from the first, doubling, to the max."""
_READ_WAIT_SECONDS = 0.5
"""How long one read of the event stream waits before checking whether the run has ended."""


class DurableRuns:
    """Start and drive durable runs in the database at ``database_url``, from any process.

    The connection opens on first use; :meth:`aclose` (or ``async with``) closes it. A call
    that finds the database away (restarting, unreachable, a SQLite file locked by another
    process) retries with backoff for up to ``unreachable_after`` seconds, then raises
    :class:`DurableError` saying "database unreachable".
    """

    def __init__(self, database_url: str, *, unreachable_after: float = UNREACHABLE_AFTER) -> None:
        if not unreachable_after > 0:
            raise ValueError(f"unreachable_after must be positive, not {unreachable_after!r}")
        check_database_url(database_url)
        self._url = database_url
        self._unreachable_after = unreachable_after
        self._client: DBOSClient | None = None
        self._known_agents: set[str] = set()

    async def __aenter__(self) -> DurableRuns:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection (it reopens if the client is used again)."""
        client, self._client = self._client, None
        if client is not None:
            await anyio.to_thread.run_sync(client.destroy)

    # --- starting and steering --------------------------------------------------------------

    async def start(
        self,
        agent: str,
        prompt: str | AgentMessage | Sequence[AgentMessage],
        *,
        params: dict[str, Any] | None = None,
        messages: Sequence[AgentMessage] | None = None,
        run_id: str | None = None,
    ) -> str:
        """Queue a run of ``agent`` on ``prompt``; return its id.

        ``run_id`` is an idempotency key: starting a run_id that exists returns it and starts
        nothing, whatever the prompt. ``messages``: an earlier transcript to continue from.

        Raises:
            UnknownAgentError: no worker has announced an agent of that name.
            DurableError: the database cannot be reached or has no worker's tables yet.
        """
        await self._check_agent(agent)
        options: EnqueueOptions = {
            "queue_name": QUEUE,
            "workflow_name": WORKFLOW,
            "workflow_id": run_id if run_id is not None else uuid.uuid4().hex,
        }
        prompts = [encode_message(message) for message in _as_prompts(prompt)]
        earlier = [encode_message(message) for message in messages or ()]
        args = (agent, dict(params or {}), prompts, earlier, now_ms())
        client = await self._dbos()
        handle = await self._call(functools.partial(client.enqueue, options, *args))
        return handle.get_workflow_id()

    async def steer(self, run_id: str, message: AgentMessage | str) -> None:
        """Queue ``message`` for the run's next steering poll (after the current turn).

        Raises:
            UnknownRunError: no run has that id.
            DurableError: the run has finished (success or error): nothing would read it.
        """
        await self._send_message(run_id, message, STEER)

    async def follow_up(self, run_id: str, message: AgentMessage | str) -> None:
        """Queue ``message`` for when the run would otherwise stop.

        Raises:
            UnknownRunError: no run has that id.
            DurableError: the run has finished (success or error): nothing would read it.
        """
        await self._send_message(run_id, message, FOLLOW_UP)

    async def abort(self, run_id: str) -> None:
        """Abort softly: the run closes out as an in-process abort does, and ends in success.

        An abort of a run that has ended changes nothing.
        """
        await self.status(run_id)
        await self._send(run_id, True, ABORT)
        await self._send(run_id, abort_message(), DECISION)  # a call that waits ends aborted

    async def stop(self, run_id: str, *, grace: float | None = None) -> None:
        """Stop gracefully: the run finishes the reply it is making and that reply's tool
        calls, then ends (``agent_end``) before its next request; queued steering and
        follow-ups stay unread. A stop of a run that has ended changes nothing.

        Args:
            grace: seconds after which the stop becomes an :meth:`abort`, for a run that has
                not finished its step by then.

        Raises:
            ValueError: ``grace`` is negative.
            UnknownRunError: no run has that id.
        """
        if grace is not None and not grace >= 0:
            raise ValueError(f"grace must be a number of seconds >= 0, not {grace!r}")
        await self.status(run_id)
        await self._send(run_id, {"grace": grace}, STOP)

    # --- approvals ----------------------------------------------------------------------------

    async def pending(self, run_id: str) -> list[PendingToolCall]:
        """The run's tool calls that wait for a decision, in the order they wait (none when
        the run is not waiting). A run that waited when its worker died still lists them while
        it is queued for recovery: a decision given then is received when it goes on.

        Raises:
            UnknownRunError: no run has that id.
        """
        workflow = await self._workflow(run_id, load_output=False)
        if _STATES.get(workflow.status, "error") in _FINISHED:
            return []
        return await self._waiting_calls(run_id)

    async def approve(self, run_id: str, tool_call_id: str) -> None:
        """Let the waiting call ``tool_call_id`` run.

        Raises:
            UnknownRunError: no run has that id.
            DurableError: the run has no call of that id waiting for a decision.
        """
        await self._decide(run_id, tool_call_id, Approve())

    async def deny(self, run_id: str, tool_call_id: str, reason: str | None = None) -> None:
        """Answer the waiting call ``tool_call_id`` ``Tool call denied[: reason]``, unrun.

        Raises:
            UnknownRunError: no run has that id.
            DurableError: the run has no call of that id waiting for a decision.
        """
        await self._decide(run_id, tool_call_id, Deny(reason))

    async def _decide(self, run_id: str, tool_call_id: str, decision: Decision) -> None:
        waiting = await self.pending(run_id)
        if not any(call.tool_call_id == tool_call_id for call in waiting):
            ids = ", ".join(repr(call.tool_call_id) for call in waiting) or "none"
            raise DurableError(
                f"run {run_id!r} has no tool call {tool_call_id!r} waiting for a decision "
                f"(waiting: {ids})"
            )
        await self._send(run_id, decision_message(tool_call_id, decision), DECISION)

    async def _waiting_calls(self, run_id: str) -> list[PendingToolCall]:
        client = await self._dbos()
        value = await self._call(
            functools.partial(client.get_event, run_id, PENDING, timeout_seconds=0)
        )
        return decode_pending(value)

    async def cancel(self, run_id: str) -> None:
        """Stop the run at its next step boundary; it ends cancelled (see :meth:`resume`)."""
        await self.status(run_id)
        client = await self._dbos()
        await self._call(functools.partial(client.cancel_workflow, run_id))

    async def resume(self, run_id: str) -> None:
        """Continue a cancelled or orphaned run; steps that had not finished run again."""
        await self.status(run_id)
        client = await self._dbos()
        await self._call(functools.partial(client.resume_workflow, run_id))

    async def recover(self, executor_id: str) -> list[str]:
        """Take over the unfinished runs of the worker ``executor_id``, known to be dead.

        Their in-flight steps run again on whichever worker takes them: never call this for a
        worker that is still alive. Returns the ids of the runs moved back to the queue.
        """
        client = await self._dbos()
        stuck = await self._call(
            functools.partial(
                client.list_workflows,
                name=WORKFLOW,
                status="PENDING",
                executor_id=executor_id,
                load_input=False,
                load_output=False,
            )
        )
        moved = []
        for workflow in stuck:
            await self._call(functools.partial(client.resume_workflow, workflow.workflow_id))
            moved.append(workflow.workflow_id)
        return moved

    # --- watching -----------------------------------------------------------------------------

    async def status(self, run_id: str) -> RunStatus:
        """Where the run is.

        Raises:
            UnknownRunError: no run has that id.
        """
        return await self._status_of(await self._workflow(run_id, load_output=False))

    async def list_runs(
        self, *, state: RunState | None = None, agent: str | None = None
    ) -> list[RunStatus]:
        """Every run (oldest first), or those in ``state`` / of ``agent``."""
        client = await self._dbos()
        statuses = None if state is None else _DBOS_STATES[state]
        found = await self._call(
            functools.partial(
                client.list_workflows, name=WORKFLOW, status=statuses, load_output=False
            )
        )
        runs = [await self._status_of(workflow) for workflow in found]
        return [
            run
            for run in runs
            if (agent is None or run.agent == agent) and (state is None or run.state == state)
        ]

    async def result(self, run_id: str) -> list[AgentMessage]:
        """Wait for the run to end; return its new messages.

        Raises:
            UnknownRunError: no run has that id.
            RunFailedError: the run ended in error or was cancelled (never for the database
                being away: that is retried, up to the client's bound).
            DurableError: the database stayed unreachable for longer than the bound.
        """
        delay = _RESULT_FIRST_POLL
        while True:
            workflow = await self._workflow(run_id, load_output=True)
            state = _STATES.get(workflow.status, "error")
            if state == "success":
                return [decode_message(value) for value in workflow.output]
            if state == "cancelled":
                raise RunFailedError(f"run {run_id!r} was cancelled")
            if state == "error":
                raise RunFailedError(f"run {run_id!r} failed: {workflow.error}")
            await anyio.sleep(delay)
            delay = min(delay * 2, _RESULT_MAX_POLL)

    async def output(self, run_id: str) -> Any:
        """Wait for the run to end; return its typed answer as JSON (what the agent's
        ``output_type`` reads it from), or ``None`` when the run gave none.

        Raises:
            UnknownRunError: no run has that id.
            RunFailedError: the run ended in error (its output's retries spent, say) or was
                cancelled.
            DurableError: the database stayed unreachable for longer than the bound.
        """
        given = given_output(await self.result(run_id))
        return None if given is None else given.details

    async def transcript(self, run_id: str) -> list[AgentMessage]:
        """Wait for the run to end; return its whole conversation: the messages it was started
        with and its new ones, or for a run that compacted, the compacted transcript it ended
        with. What a next run of the conversation continues from (``start(messages=...)``).

        Raises:
            UnknownRunError, RunFailedError, DurableError: as :meth:`result`.
        """
        new = await self.result(run_id)
        client = await self._dbos()
        compacted = await self._call(
            functools.partial(client.get_event, run_id, TRANSCRIPT, timeout_seconds=0)
        )
        if compacted is not None:
            return [decode_message(value) for value in compacted]
        workflow = await self._workflow(run_id, load_output=False)
        earlier = workflow.input["args"][3] if workflow.input is not None else []
        return [*(decode_message(value) for value in earlier), *new]

    async def compactions(self, run_id: str) -> int:
        """How often the run has compacted its transcript so far (see ``AgentSpec.compaction``).

        Raises:
            UnknownRunError: no run has that id.
        """
        await self.status(run_id)
        client = await self._dbos()
        steps = await self._call(functools.partial(client.list_workflow_steps, run_id))
        return sum(
            1
            for step in steps
            if step["function_name"] == COMPACTION_STEP
            and isinstance(step["output"], tuple)
            and step["output"][0] == "compacted"
        )

    async def events(
        self, run_id: str, *, after: int = -1
    ) -> AsyncIterator[tuple[int, AgentEvent]]:
        """The run's events as ``(offset, event)``, from the first with an offset above ``after``.

        Live or after the fact, from any process. Ends after ``agent_end``, or when the run ended
        without one (cancelled, failed). Offsets grow but are not contiguous; pass the last one
        seen as ``after`` to resume.
        """
        async for offset, _at_ms, event in self.timed_events(run_id, after=after):
            yield offset, event

    async def timed_events(
        self, run_id: str, *, after: int = -1
    ) -> AsyncIterator[tuple[int, int | None, AgentEvent]]:
        """As :meth:`events`, with the run's clock when each event was emitted: ``(offset,
        at_ms, event)``, ``at_ms`` in milliseconds since the epoch.

        The time of a lifecycle event is recorded (a replayed run has the times of its first
        run), so the differences are the run's durations, however late the events are read.
        That of an update is the wall clock of the step that wrote it. ``None``: not recorded.
        """
        await self.status(run_id)
        client = await self._dbos()
        first = max(after, 0) // ENTRY_SPAN
        transcript = Transcript()
        for entry in range(first):  # their message_end events make agent_end's messages
            value = await self._read_entry(client, run_id, entry)
            if value is None:
                return
            decode_events(entry, value, after, transcript)
        entry = first
        while True:
            value = await self._read_entry(client, run_id, entry)
            if value is None:
                return
            for offset, at_ms, event in decode_events(entry, value, after, transcript):
                yield offset, at_ms, event
                if event.type == "agent_end":
                    return
            entry += 1

    async def _read_entry(self, client: DBOSClient, run_id: str, entry: int) -> list[Any] | None:
        """Stream entry ``entry``, waiting for it; ``None`` once the run ended without it."""
        read = functools.partial(
            client.read_stream_offset,
            run_id,
            EVENTS,
            entry,
            polling_interval_sec=0.05,
            timeout_seconds=_READ_WAIT_SECONDS,
        )
        while True:
            ended = (await self.status(run_id)).state in _ENDED
            try:
                return await self._call(read)
            except DBOSStreamTimeoutError:
                if ended:
                    return None

    # --- plumbing -----------------------------------------------------------------------------

    async def _send_message(self, run_id: str, message: AgentMessage | str, topic: str) -> None:
        # A message to a finished run would sit in the database unread: refuse it. (A run that
        # finishes between this check and the send drops it: its last poll came first.)
        state = (await self.status(run_id)).state
        if state in _FINISHED:
            what = "steering" if topic == STEER else "a follow-up"
            raise DurableError(f"run {run_id!r} has ended ({state}): it takes no {what} message")
        await self._send(run_id, encode_message(_as_message(message)), topic)

    async def _send(self, run_id: str, message: Any, topic: str) -> None:
        client = await self._dbos()
        await self._call(functools.partial(client.send, run_id, message, topic))

    async def _workflow(self, run_id: str, *, load_output: bool) -> Any:
        """The DBOS status of the run ``run_id``.

        Raises:
            UnknownRunError: no run has that id.
        """
        client = await self._dbos()
        found = await self._call(
            functools.partial(
                client.list_workflows,
                workflow_ids=[run_id],
                name=WORKFLOW,
                load_output=load_output,
            )
        )
        if not found:
            raise UnknownRunError(f"no durable run has the id {run_id!r}")
        return found[0]

    async def _check_agent(self, agent: str) -> None:
        if agent in self._known_agents:
            return
        client = await self._dbos()
        announced = await self._call(
            functools.partial(
                client.list_workflows, name=AGENTS_WORKFLOW, load_input=True, load_output=False
            )
        )
        for workflow in announced:
            inputs: Any = workflow.input
            if inputs is not None:
                self._known_agents.update(inputs["args"][0])
        if agent not in self._known_agents:
            known = ", ".join(repr(name) for name in sorted(self._known_agents)) or "none"
            raise UnknownAgentError(
                f"no worker of {masked(self._url)} serves an agent named {agent!r}; known: {known}"
            )

    async def _dbos(self) -> DBOSClient:
        if self._client is None:
            url = self._url
            # DBOS's own retries of a lost connection are off: ours are bounded.
            connect = functools.partial(
                DBOSClient, system_database_url=url, retry_connection_errors=False
            )
            try:
                self._client = await self._call(connect)
            except DurableError:
                raise
            except Exception as exc:
                raise DurableError(
                    f"cannot reach the database {masked(url)}: {engine_error_text(exc)}"
                ) from exc
        return self._client

    async def _call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        operation = functools.partial(function, *args, **kwargs)
        try:
            return await call_through_outages(
                operation, database_url=self._url, bound=self._unreachable_after
            )
        except DBOSNonExistentWorkflowError as exc:
            raise UnknownRunError(str(exc)) from exc
        except sqlalchemy.exc.DBAPIError as exc:
            if not is_missing_tables(exc):
                raise
            raise DurableError(
                f"{masked(self._url)} holds no durable runs: no worker has used this database "
                "yet (start one with pi-core worker MODULE:ATTR --db URL), or the URL is not "
                "the one the workers use"
            ) from None

    async def _status_of(self, workflow: Any) -> RunStatus:
        state = _STATES.get(workflow.status, "error")
        if state == "running" and await self._waiting_calls(workflow.workflow_id):
            state = "waiting"
        inputs = workflow.input
        agent = inputs["args"][0] if inputs is not None else ""
        return RunStatus(
            workflow.workflow_id, agent, state, workflow.executor_id, workflow.created_at or 0
        )


def _as_message(message: AgentMessage | str) -> AgentMessage:
    return UserMessage([TextContent(message)]) if isinstance(message, str) else message


def _as_prompts(prompt: str | AgentMessage | Sequence[AgentMessage]) -> list[AgentMessage]:
    if isinstance(prompt, str):
        return [UserMessage([TextContent(prompt)])]
    if isinstance(prompt, (list, tuple)):
        return list(prompt)
    return [prompt]  # type: ignore[list-item]
