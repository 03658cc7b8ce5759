"""Tool calls a durable run holds for a person's decision: published, waited for, decided.

The run publishes the calls that wait as a workflow event (``pending``), which any client reads;
a decision is a message on the ``decision`` topic, which the run receives. Both are recorded, so
a worker that dies while a call waits loses nothing: on recovery the run waits again, or finds
the decision it had received, or the one sent in the meantime.

The wire forms are plain dicts: a client reads them without the agents' code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import anyio
from dbos import DBOS

from .. import Approve, Decision, Deny, PendingToolCall
from ..lowlevel import now_ms
from ._dbos_names import DECISION, PENDING
from ._dbos_recorded import recorded

__all__ = [
    "APPROVAL_TIMED_OUT",
    "INTERRUPTED",
    "DoubtGate",
    "Waited",
    "abort_message",
    "await_decisions",
    "deadline_ms",
    "decision_message",
    "decode_pending",
]

INTERRUPTED: Final = "interrupted: it may or may not have taken effect"
"""Why a call of a ``replay="never"`` tool that its worker died in waits for a decision."""
APPROVAL_TIMED_OUT: Final = "Approval timed out"
"""The reason a call is denied when no decision came within the spec's ``approval_timeout``."""

_FOREVER = 10 * 365 * 24 * 3600.0
"""How long a call waits without an ``approval_timeout``: longer than any run."""


def encode_pending(calls: Sequence[PendingToolCall]) -> list[dict[str, Any]]:
    return [
        {
            "tool_call_id": c.tool_call_id,
            "tool_name": c.tool_name,
            "args": c.args,
            "reason": c.reason,
        }
        for c in calls
    ]


def decode_pending(value: Any) -> list[PendingToolCall]:
    """The calls of a ``pending`` event (none when the run never published one)."""
    if not value:
        return []
    return [
        PendingToolCall(item["tool_call_id"], item["tool_name"], item["args"], item["reason"])
        for item in value
    ]


def decision_message(tool_call_id: str, decision: Decision) -> dict[str, Any]:
    """What a client sends a run to decide ``tool_call_id``, stamped with when it was given."""
    reason = decision.reason if isinstance(decision, Deny) else None
    approve = isinstance(decision, Approve)
    return {"tool_call_id": tool_call_id, "approve": approve, "reason": reason, "at": now_ms()}


def abort_message() -> dict[str, Any]:
    """What an abort sends a run that may be waiting for decisions: the wait ends aborted."""
    return {"abort": True, "at": now_ms()}


class Waited:
    """What a wait for decisions came to: one per call, or an abort; and when, as received."""

    __slots__ = ("aborted", "at_ms", "decisions")

    def __init__(self) -> None:
        self.decisions: dict[str, Decision] = {}
        self.aborted = False
        self.at_ms = 0


async def await_decisions(
    calls: Sequence[PendingToolCall],
    approval_timeout: float | None,
    abort_at_ms: int | None = None,
) -> Waited:
    """Publish ``calls`` as waiting, receive a decision for each (or an abort), publish none.

    Workflow code: every operation is recorded, in the order of the calls. After
    ``approval_timeout`` seconds (from when the wait began, across restarts), the calls still
    waiting are denied :data:`APPROVAL_TIMED_OUT`. At ``abort_at_ms`` (a recorded time: the
    run's deadline), if that comes first, the wait ends aborted. A decision for a call that
    does not wait is dropped.
    """
    waited = Waited()
    waiting = list(calls)
    await _publish(waiting)
    deadline = None
    if approval_timeout is not None:
        deadline = await recorded(
            DBOS.run_step_async({"name": "approval deadline"}, deadline_ms, approval_timeout),
            "the approval deadline",
        )
    ends = [at for at in (deadline, abort_at_ms) if at is not None]
    while waiting:
        message = await recorded(
            DBOS.recv_async(DECISION, timeout_seconds=_seconds_until(min(ends, default=None))),
            "a decision",
        )
        if message is None and abort_at_ms is not None and abort_at_ms == min(ends):
            waited.at_ms = abort_at_ms  # the run's deadline passed first: it aborts
            waited.aborted = True
            break
        if message is None:  # the deadline passed (a recorded outcome, as the message is)
            waited.at_ms = deadline or 0
            for call in waiting:
                waited.decisions[call.tool_call_id] = Deny(APPROVAL_TIMED_OUT)
            break
        waited.at_ms = max(waited.at_ms, int(message.get("at", 0)))
        if message.get("abort"):
            waited.aborted = True
            break
        decided = message["tool_call_id"]
        if not any(call.tool_call_id == decided for call in waiting):
            continue
        waited.decisions[decided] = Approve() if message["approve"] else Deny(message["reason"])
        waiting = [call for call in waiting if call.tool_call_id != decided]
        if waiting:
            await _publish(waiting)
    await _publish([])
    return waited


async def _publish(calls: Sequence[PendingToolCall]) -> None:
    await recorded(DBOS.set_event_async(PENDING, encode_pending(calls)), "the waiting calls")


async def deadline_ms(seconds: float) -> int:
    """``seconds`` from now, in milliseconds since the epoch: a step's output, recorded."""
    return now_ms() + int(seconds * 1000)


def _seconds_until(deadline_ms: int | None) -> float:
    if deadline_ms is None:
        return _FOREVER
    return max(0.0, (deadline_ms - now_ms()) / 1000)


class DoubtGate:
    """Orders the decisions of one batch's calls that are in doubt.

    A call in doubt waits for a decision, and approved it runs again: operations of the run
    that take their ids from the run's sequence, so they must come in the same order on every
    replay, however the batch's calls finish. A call in doubt takes its turn once every call
    before it in the batch (source order) has finished; the batch starts its calls in that
    order, so the wait never holds a slot another call needs first.
    """

    __slots__ = ("_changed", "_finished", "_ids")

    def __init__(self, tool_call_ids: Sequence[str]) -> None:
        self._ids = list(tool_call_ids)
        self._finished: set[str] = set()
        self._changed = anyio.Event()

    def finish(self, tool_call_id: str) -> None:
        """Note that a call of the batch has its outcome."""
        self._finished.add(tool_call_id)
        self._changed.set()  # wakes whoever waits now; later waits wait on the next one
        self._changed = anyio.Event()

    async def wait_turn(self, tool_call_id: str) -> None:
        """Return once every call before ``tool_call_id`` has finished."""
        while not self._is_turn(tool_call_id):
            await self._changed.wait()

    def _is_turn(self, tool_call_id: str) -> bool:
        for other in self._ids:
            if other == tool_call_id:
                return True
            if other not in self._finished:
                return False
        return True
