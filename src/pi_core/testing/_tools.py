"""Scripted tools: the test decides how each call ends, how many updates it sends, and when.

A call of a scripted tool walks through *steps*: one per progress update, then the last step that
ends it. It waits at a gate before each step until it is released, so the order in which calls
update and complete is the order of the releases, never wall time. Release by hand with
:meth:`ToolScript.release`, or give the script a release order and the batches it will see and
let it release by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import anyio
import attrs

from .. import (
    AgentTool,
    AgentToolResult,
    PiCoreError,
    TextContent,
    ToolExecutionMode,
    ToolUpdateCallback,
)
from ..nursery import AbortSignal

__all__ = [
    "CallBehaviour",
    "ReleaseBatch",
    "ScriptedToolError",
    "ToolOutcome",
    "ToolScript",
]

ToolOutcome = Literal["succeed", "terminate", "fail", "timeout"]
"""How a call ends: a result, a result asking to ``terminate``, an exception, or never (it waits
to be cancelled; give its tool a ``timeout``)."""

Finish = Literal["returned", "raised", "cancelled"]

EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class ScriptedToolError(PiCoreError):
    """What a call scripted to ``"fail"`` raises; the loop turns it into an error result."""


def _non_negative(_instance: object, _attribute: object, value: int) -> None:
    if value < 0:
        raise ValueError(f"updates must be >= 0, not {value!r}")


@attrs.frozen
class CallBehaviour:
    """What one tool call does: ``updates`` progress updates, then its ``outcome``."""

    outcome: ToolOutcome = "succeed"
    updates: int = attrs.field(default=0, validator=_non_negative)
    """Each update is a step of its own; a ``"timeout"`` call sends them all when it starts."""

    @property
    def steps(self) -> int:
        """How many releases the call needs (none for a call that never ends by itself)."""
        return 0 if self.outcome == "timeout" else self.updates + 1


@attrs.frozen
class ReleaseBatch:
    """The calls of one tool batch that will execute, and how many of them run at once.

    ``capacity`` is 1 for a sequential batch, ``max_parallel_tools`` for a capped parallel one,
    ``None`` when every call runs at once.
    """

    calls: tuple[str, ...]
    capacity: int | None = None


class _Call:
    """The life of one call: where it is and how many releases it has been granted."""

    __slots__ = (
        "behaviour",
        "credits",
        "finished",
        "hanging",
        "id",
        "steps_done",
        "waiting",
        "wakeup",
    )

    def __init__(self, call_id: str, behaviour: CallBehaviour) -> None:
        self.id = call_id
        self.behaviour = behaviour
        self.credits = 0
        self.steps_done = 0
        self.waiting = False
        self.hanging = False
        self.finished = False
        self.wakeup: anyio.Event | None = None

    @property
    def idle(self) -> bool:
        """Waiting at its gate with no release pending: only a release moves it on."""
        return self.hanging or (self.waiting and self.credits == 0)


class ToolScript:
    """Per-call behaviours for scripted tools, the gates their calls wait at, and a log.

    ``behaviours`` maps a tool call id to its :class:`CallBehaviour`; other calls get
    ``default``. Tools made by :meth:`tool` share the script.

    Without ``order`` every step waits for :meth:`release`. With ``order`` (call ids, one entry
    per step) the script releases by itself whenever the batch is quiet: every call that can run
    is waiting at its gate (``batches`` says which calls execute and how many run at once). It
    then releases the first step in ``order`` whose call is waiting, so the order holds as far as
    the capacity of the batch allows; calls missing from ``order`` go last, in batch order.
    """

    def __init__(
        self,
        behaviours: Mapping[str, CallBehaviour] | None = None,
        *,
        default: CallBehaviour | None = None,
        order: Sequence[str] | None = None,
        batches: Iterable[ReleaseBatch] = (),
    ) -> None:
        self.behaviours: dict[str, CallBehaviour] = dict(behaviours or {})
        self.default: CallBehaviour = default if default is not None else CallBehaviour()
        self._auto = order is not None
        self._order = list(order or ())
        self._batches = list(batches)
        self._batch_of = {cid: batch for batch in self._batches for cid in batch.calls}
        self._calls: dict[str, _Call] = {}
        self._changed: anyio.Event | None = None
        self.log: list[tuple[Literal["enter", "exit"], str]] = []
        """``("enter", id)`` when a call starts executing, ``("exit", id)`` when it stops."""
        self.finishes: dict[str, Finish] = {}
        """How each call stopped: ``"returned"``, ``"raised"`` or ``"cancelled"``."""

    # --- the tools ------------------------------------------------------------------------------

    def tool(
        self,
        name: str,
        *,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        timeout: float | None = None,
        execution_mode: ToolExecutionMode | None = None,
    ) -> AgentTool:
        """An :class:`AgentTool` whose calls follow this script."""

        async def execute(
            tool_call_id: str, params: Any, signal: AbortSignal, on_update: ToolUpdateCallback
        ) -> AgentToolResult:
            return await self._execute(name, tool_call_id, on_update)

        return AgentTool(
            name,
            description or f"The scripted tool {name}.",
            parameters if parameters is not None else EMPTY_PARAMETERS,
            execute,
            execution_mode=execution_mode,
            timeout=timeout,
        )

    # --- what the test sees ---------------------------------------------------------------------

    @property
    def finished(self) -> list[str]:
        """Ids of the calls that stopped executing, in the order they stopped."""
        return [call_id for kind, call_id in self.log if kind == "exit"]

    @property
    def running(self) -> frozenset[str]:
        """Ids of the calls executing now: empty once a run is over, whatever happened."""
        entered = {call_id for kind, call_id in self.log if kind == "enter"}
        return frozenset(entered.difference(self.finished))

    def max_concurrency(self, call_ids: Iterable[str] | None = None) -> int:
        """The most calls (of ``call_ids``, default all) that were executing at one time."""
        wanted = None if call_ids is None else set(call_ids)
        now = peak = 0
        for kind, call_id in self.log:
            if wanted is not None and call_id not in wanted:
                continue
            now += 1 if kind == "enter" else -1
            peak = max(peak, now)
        return peak

    async def release(self, call_id: str) -> None:
        """Let the call take its next step; return once it has sent that update or stopped.

        Waits first for the call to reach its gate (so it may be called before the call
        starts). A ``"timeout"`` call never reaches a gate: do not release it.
        """
        call = await self._wait_for_call(call_id)
        await self._wait_until(lambda: call.idle and not call.finished)
        target = call.steps_done + 1
        self._grant(call)
        await self._wait_until(lambda: call.steps_done >= target)

    async def finish(self, call_id: str) -> None:
        """Release the call until it has stopped."""
        call = await self._wait_for_call(call_id)
        while not call.finished:
            await self.release(call_id)

    async def wait_finished(self, call_id: str) -> None:
        """Wait until the call has stopped executing (returned, raised or was cancelled)."""
        call = await self._wait_for_call(call_id)
        await self._wait_until(lambda: call.finished)

    # --- one call -------------------------------------------------------------------------------

    async def _execute(
        self, name: str, call_id: str, on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        call = self._enter(call_id)
        try:
            result = await self._perform(name, call, on_update)
        except ScriptedToolError:
            self._exit(call, "raised")
            raise
        except BaseException:
            self._exit(call, "cancelled")
            raise
        self._exit(call, "returned")
        return result

    async def _perform(
        self, name: str, call: _Call, on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        behaviour = call.behaviour
        if behaviour.outcome == "timeout":
            for step in range(1, behaviour.updates + 1):
                on_update(_update(call.id, step))
            call.hanging = True
            self._notify(call)
            await anyio.sleep_forever()
        for step in range(1, behaviour.updates + 1):
            await self._gate(call)
            on_update(_update(call.id, step))
            call.steps_done += 1
        await self._gate(call)
        if behaviour.outcome == "fail":
            raise ScriptedToolError(f"{name} {call.id} failed")
        return AgentToolResult(
            [TextContent(f"{name} {call.id} ok")],
            {"call_id": call.id},
            terminate=behaviour.outcome == "terminate",
        )

    def _enter(self, call_id: str) -> _Call:
        if call_id in self._calls:
            raise RuntimeError(f"tool call {call_id!r} executed twice")
        call = self._calls[call_id] = _Call(call_id, self.behaviours.get(call_id, self.default))
        self.log.append(("enter", call_id))
        return call

    def _exit(self, call: _Call, how: Finish) -> None:
        call.finished = True
        call.waiting = call.hanging = False
        call.steps_done += 1
        self.finishes[call.id] = how
        self.log.append(("exit", call.id))
        self._notify(call)

    async def _gate(self, call: _Call) -> None:
        """Wait for a release; each release lets exactly one step through."""
        call.waiting = True
        self._notify(call)
        try:
            while call.credits == 0:
                call.wakeup = anyio.Event()
                await call.wakeup.wait()
        finally:
            call.waiting = False
        call.credits -= 1

    def _grant(self, call: _Call) -> None:
        call.credits += 1
        if call.wakeup is not None:
            call.wakeup.set()

    # --- waiting and automatic release ----------------------------------------------------------

    def _notify(self, call: _Call) -> None:
        """A call changed state: wake the waiters of :meth:`release`, then release by order."""
        if self._changed is not None:
            self._changed.set()
            self._changed = None
        if self._auto:
            self._auto_release(call)

    async def _wait_until(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    async def _wait_for_call(self, call_id: str) -> _Call:
        await self._wait_until(lambda: call_id in self._calls)
        return self._calls[call_id]

    def _auto_release(self, changed: _Call) -> None:
        batch = self._batch_of.get(changed.id, ReleaseBatch((changed.id,), 1))
        present = [self._calls[cid] for cid in batch.calls if cid in self._calls]
        present = [call for call in present if not call.finished]
        unfinished = len(batch.calls) - sum(
            1 for cid in batch.calls if cid in self._calls and self._calls[cid].finished
        )
        capacity = unfinished if batch.capacity is None else min(batch.capacity, unfinished)
        if len(present) < capacity or not all(call.idle for call in present):
            return  # a call is still on its way to a gate: the batch is not quiet yet
        waiting = {call.id: call for call in present if not call.hanging}
        chosen = self._take_from_order(waiting) or next(iter(waiting.values()), None)
        if chosen is not None:
            self._grant(chosen)

    def _take_from_order(self, waiting: Mapping[str, _Call]) -> _Call | None:
        for position, call_id in enumerate(self._order):
            if call_id in waiting:
                del self._order[position]
                return waiting[call_id]
        return None


def _update(call_id: str, step: int) -> AgentToolResult:
    return AgentToolResult([TextContent(f"{call_id} update {step}")], {"update": step})
