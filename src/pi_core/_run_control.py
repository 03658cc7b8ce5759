"""The handle a run's owner keeps to control it from outside: a graceful stop (escalated to an
abort after a grace), the limits the run counts, and the deadline that aborts it.

The timers (a grace, the deadline) are tasks of the run's task group, started only when asked
for, outside the debug watch of that group: an abort cancels them with the group, which is what
their own firing does anyway, and the run cancels them before its group closes.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

import anyio
from anyio.abc import TaskGroup

from ._limits import LimitCounter, LimitReached, RunLimits
from ._messages import Usage
from ._texts import deadline_exceeded_text
from .nursery import AbortController, AbortSignal

__all__ = ["CURRENT_RUN_CONTROL", "RunControl", "control_for"]

CURRENT_RUN_CONTROL: ContextVar[RunControl | None] = ContextVar("pi_core_run_control", default=None)
"""The control of the run whose tools the current task serves: a sub-agent started there is
stopped with that run, and may share its limits."""


class RunControl:
    """Stops a run gracefully, counts its limits, and fires its timers.

    Args:
        abort: aborts the run (its controller's ``abort``).
        limits: the run's limits, if any.
        parent: the control of the run in whose tool call this run is a sub-agent: a stop of
            that run, or a limit it reaches, ends this one after its current turn too.
        share_limits: count this run's replies against the parent's limits as well (and so
            against the grandparent's, when the parent shares them).
    """

    __slots__ = (
        "_abort",
        "_deadline",
        "_group",
        "_release",
        "_started_at",
        "_timers",
        "_waiting_grace",
        "counter",
        "parent",
        "shares_limits",
        "stopped_by",
        "stopping",
    )

    def __init__(
        self,
        abort: Callable[[object], None],
        limits: RunLimits | None = None,
        parent: RunControl | None = None,
        share_limits: bool = False,
    ) -> None:
        self._abort = abort
        self.parent = parent
        self.shares_limits = share_limits and parent is not None
        self.counter = None if limits is None else LimitCounter(limits)
        self._deadline = None if limits is None else limits.deadline
        self._group: TaskGroup | None = None
        self._timers: list[anyio.CancelScope] = []
        self._waiting_grace: float | None = None
        self._release: Callable[[], None] | None = None
        self._started_at = 0.0
        self.stopping = False
        """Whether a graceful stop was asked for: the run ends after its current turn."""
        self.stopped_by: LimitReached | None = None
        """The limit that ended the run, once one has."""

    def stop(self, grace: float | None = None) -> None:
        """End the run after its current turn; abort it if that takes more than ``grace`` s."""
        self.stopping = True
        if grace is None:
            return
        if self._group is None:  # the run has not opened its group yet
            waiting = self._waiting_grace
            self._waiting_grace = grace if waiting is None else min(waiting, grace)
        else:
            self._start_timer(grace, self._grace_expired)

    def attach(self, group: TaskGroup) -> None:
        """The run's group is open: start the deadline, and a grace asked for before."""
        self._group = group
        self._started_at = anyio.current_time()
        if self._deadline is not None:
            self._start_timer(self._deadline, self._deadline_expired)
        if self._waiting_grace is not None:
            self._start_timer(self._waiting_grace, self._grace_expired)

    def detach(self) -> None:
        """The run is ending: cancel its timers, so that its group can close."""
        self._group = None
        for scope in self._timers:
            scope.cancel()
        if self._release is not None:
            self._release()

    def ends_run(self, spent: Usage | None) -> bool:
        """After a turn that ``spent`` this (``None``: nothing new to count): whether the run
        ends here (a stop was asked for, or a limit is reached, here or above a sub-agent)."""
        counter = self.counter
        if counter is not None and spent is not None and self.stopped_by is None:
            self.stopped_by = counter.add(spent)
        parent = self.parent
        if parent is None:
            return self.stopping or self.stopped_by is not None
        if self.shares_limits:
            if spent is not None:
                parent.charge(spent)
            if self.stopped_by is None:
                self.stopped_by = parent.limit_reached()
        return self.stopping or self.stopped_by is not None or parent.halted()

    def charge(self, spent: Usage) -> None:
        """Count a reply of a sub-agent that shares this run's limits (as it happens, so that a
        limit its spending reaches ends this run too, after its current turn)."""
        counter = self.counter
        if counter is not None and self.stopped_by is None:
            self.stopped_by = counter.add(spent)
        if self.shares_limits:
            assert self.parent is not None
            self.parent.charge(spent)

    def limit_reached(self) -> LimitReached | None:
        """The limit this run, or a run whose limits it shares, has reached."""
        if self.stopped_by is not None or not self.shares_limits:
            return self.stopped_by
        assert self.parent is not None
        return self.parent.limit_reached()

    def halted(self) -> bool:
        """Whether this run ends after its current turn, by a stop or a limit, its own or of a
        run it serves as a sub-agent."""
        if self.stopping or self.stopped_by is not None:
            return True
        return self.parent is not None and self.parent.halted()

    def _start_timer(self, seconds: float, fire: Callable[[], None]) -> None:
        group = self._group
        assert group is not None
        scope = anyio.CancelScope()
        self._timers.append(scope)
        group.start_soon(_timer, scope, seconds, fire)

    def _grace_expired(self) -> None:
        self._abort(None)

    def _deadline_expired(self) -> None:
        deadline = self._deadline
        assert deadline is not None
        elapsed = anyio.current_time() - self._started_at
        if self.stopped_by is None:
            self.stopped_by = LimitReached("deadline", deadline, elapsed)
        self._abort(deadline_exceeded_text(deadline))


async def _timer(scope: anyio.CancelScope, seconds: float, fire: Callable[[], None]) -> None:
    with scope:
        await anyio.sleep(seconds)
        fire()


def control_for(
    limits: RunLimits, signal: AbortSignal | None
) -> tuple[RunControl, AbortSignal | None]:
    """A control for a loop-level run that has limits, and the signal the run must then use.

    A deadline must be able to abort the run, so it gets a controller of its own; the caller's
    signal, if any, aborts it too. Without a deadline the caller's signal stays.
    """
    if limits.deadline is None:
        return RunControl(_no_abort, limits), signal
    controller = AbortController()
    control = RunControl(controller.abort, limits)
    if signal is not None:
        caller = signal
        control._release = caller.on_abort(lambda: controller.abort(caller.reason))
    return control, controller.signal


def _no_abort(_reason: object) -> None:
    """The abort of a run that has nothing that could abort it (no deadline, no stop)."""
