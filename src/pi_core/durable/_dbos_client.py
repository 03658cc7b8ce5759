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
from dbos import DBOSClient, EnqueueOptions
from dbos._error import (
    DBOSAwaitedWorkflowCancelledError,
    DBOSNonExistentWorkflowError,
    DBOSStreamTimeoutError,
)

from .._events import AgentEvent
from .._messages import AgentMessage, TextContent, UserMessage, now_ms
from ._dbos_names import (
    ABORT,
    AGENTS_WORKFLOW,
    EVENTS,
    FOLLOW_UP,
    QUEUE,
    STEER,
    WORKFLOW,
    masked,
)
from ._record import ENTRY_SPAN, decode_events, decode_message, encode_message
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
_ENDED = frozenset(("success", "error", "cancelled"))

_READ_WAIT_SECONDS = 0.5
"""How long one read of the event stream waits before checking whether the run has ended."""


class DurableRuns:
    """Start and drive durable runs in the database at ``database_url``, from any process.

    The connection opens on first use; :meth:`aclose` (or ``async with``) closes it.
    """

    def __init__(self, database_url: str) -> None:
        self._url = database_url
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
        """Queue ``message`` for the run's next steering poll (after the current turn)."""
        await self._send(run_id, encode_message(_as_message(message)), STEER)

    async def follow_up(self, run_id: str, message: AgentMessage | str) -> None:
        """Queue ``message`` for when the run would otherwise stop."""
        await self._send(run_id, encode_message(_as_message(message)), FOLLOW_UP)

    async def abort(self, run_id: str) -> None:
        """Abort softly: the run closes out as an in-process abort does, and ends in success."""
        await self._send(run_id, True, ABORT)

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
        client = await self._dbos()
        found = await self._call(
            functools.partial(
                client.list_workflows, workflow_ids=[run_id], name=WORKFLOW, load_output=False
            )
        )
        if not found:
            raise UnknownRunError(f"no durable run has the id {run_id!r}")
        return _run_status(found[0])

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
        runs = [_run_status(workflow) for workflow in found]
        return [run for run in runs if agent is None or run.agent == agent]

    async def result(self, run_id: str) -> list[AgentMessage]:
        """Wait for the run to end; return its new messages.

        Raises:
            UnknownRunError: no run has that id.
            RunFailedError: the run ended in error or was cancelled.
        """
        await self.status(run_id)
        client = await self._dbos()
        handle = await self._call(functools.partial(client.retrieve_workflow, run_id))
        try:
            values = await self._call(handle.get_result, polling_interval_sec=0.1)
        except DBOSAwaitedWorkflowCancelledError as exc:
            raise RunFailedError(f"run {run_id!r} was cancelled") from exc
        except UnknownRunError:
            raise
        except Exception as exc:
            raise RunFailedError(f"run {run_id!r} failed: {exc}") from exc
        return [decode_message(value) for value in values]

    async def events(
        self, run_id: str, *, after: int = -1
    ) -> AsyncIterator[tuple[int, AgentEvent]]:
        """The run's events as ``(offset, event)``, from the first with an offset above ``after``.

        Live or after the fact, from any process. Ends after ``agent_end``, or when the run ended
        without one (cancelled, failed). Offsets grow but are not contiguous; pass the last one
        seen as ``after`` to resume.
        """
        await self.status(run_id)
        client = await self._dbos()
        entry = max(after, 0) // ENTRY_SPAN
        while True:
            value = await self._read_entry(client, run_id, entry)
            if value is None:
                return
            for offset, event in decode_events(entry, value, after):
                yield offset, event
                if event.type == "agent_end":
                    return
            entry += 1

    async def _read_entry(
        self, client: DBOSClient, run_id: str, entry: int
    ) -> list[dict[str, Any]] | None:
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

    async def _send(self, run_id: str, message: Any, topic: str) -> None:
        await self.status(run_id)
        client = await self._dbos()
        await self._call(functools.partial(client.send, run_id, message, topic))

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
            try:
                self._client = await anyio.to_thread.run_sync(
                    functools.partial(
                        DBOSClient, system_database_url=url, retry_connection_errors=False
                    )
                )
            except Exception as exc:
                raise DurableError(f"cannot reach the database {masked(url)}: {exc}") from exc
        return self._client

    async def _call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs))
        except DBOSNonExistentWorkflowError as exc:
            raise UnknownRunError(str(exc)) from exc


def _run_status(workflow: Any) -> RunStatus:
    inputs = workflow.input
    agent = inputs["args"][0] if inputs is not None else ""
    return RunStatus(
        workflow.workflow_id,
        agent,
        _STATES.get(workflow.status, "error"),
        workflow.executor_id,
        workflow.created_at or 0,
    )


def _as_message(message: AgentMessage | str) -> AgentMessage:
    return UserMessage([TextContent(message)]) if isinstance(message, str) else message


def _as_prompts(prompt: str | AgentMessage | Sequence[AgentMessage]) -> list[AgentMessage]:
    if isinstance(prompt, str):
        return [UserMessage([TextContent(prompt)])]
    if isinstance(prompt, (list, tuple)):
        return list(prompt)
    return [prompt]  # type: ignore[list-item]
