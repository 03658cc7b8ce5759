"""One tool batch: preflight, execute and finalize every tool call of an assistant message.

What one call goes through is :mod:`pi_core._tool_call`'s; a batch adds the events, the
fan-out, approvals and the per-reply limit. Parallel batches run each prepared call as a child
task of the run's task group (see :func:`pi_core.nursery.fan_out`) and wait for all of them; the
parent task is the only one that emits, so events stay in one total order while
``tool_execution_end`` follows completion and tool results follow source order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from ._approvals import Decision, Deny, PendingToolCall, hold_verdict
from ._events import (
    AwaitingEmit,
    MessageEnd,
    MessageStart,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from ._hooks import AgentLoopConfig
from ._maybe_async import call_hook
from ._messages import AgentContext, AssistantMessage, ToolCall, ToolResultMessage
from ._texts import too_many_tool_calls_text, tool_call_denied_text
from ._tool_call import (
    CallResult,
    PreparedCall,
    ToolCallAborted,
    ToolCallRunner,
    aborted_outcome,
    error_result,
    failed_outcome,
    truncated_outcome,
)
from ._tools import prepared_call
from ._tracer import RunTrace
from ._validation import validate_tool_arguments
from .nursery import AbortSignal, fan_out

__all__ = ["ToolBatch", "ToolCallAborted"]


CHECKPOINT_EVERY: Final = 64
"""A batch yields to the event loop once per this many calls where nothing else may yield
(preflight, the emits of the results): a reply of thousands of calls must not hold the loop,
and an abort from another task must be heard within a few dozen calls. A batch of fewer calls
never yields for it."""


def _aborted_job_outcome(_job_index: int) -> CallResult:
    """``fan_out``'s ``aborted(index)``: every aborted call gets the same outcome."""
    return aborted_outcome()


class ToolBatch:
    """Runs the tool calls of an assistant message and returns their results in source order.

    A run keeps one for all its turns (:meth:`for_reply` points it at each reply), so that a
    turn costs no new batch and no new lookup of the tools by name.
    """

    __slots__ = (
        "_answers",
        "_calls",
        "_config",
        "_decisions",
        "_emit",
        "_holds",
        "_outcomes",
        "_result_positions",
        "_runner",
        "_task_group",
        "held",
    )

    # A parallel batch's bookkeeping, set when its calls start, for ``_on_complete``.
    _calls: list[ToolCall]
    _result_positions: list[int]
    """For each fanned-out job, the index of its call (and outcome) in the batch."""
    _outcomes: list[CallResult | None]

    def __init__(
        self,
        *,
        config: AgentLoopConfig,
        emit: AwaitingEmit,
        signal: AbortSignal,
        abortable: bool,
        task_group: TaskGroup | None = None,
        trace: RunTrace | None = None,
    ) -> None:
        self._config = config
        self._emit = emit
        self._task_group = task_group
        self._runner = ToolCallRunner(
            signal=signal,
            abortable=abortable,
            before_tool_call=config.before_tool_call,
            after_tool_call=config.after_tool_call,
            interruptions=config.interruptions,
            trace=trace,
        )
        self._decisions: Mapping[str, Decision] | None = None
        self._answers: dict[str, CallResult] | None = None
        """Outcomes decided before preflight: denied calls, approval flags that raised."""
        self._holds = False
        self.held: list[PendingToolCall] | None = None
        """The calls held for approval: they get no event and no result in this batch."""

    def for_reply(
        self,
        message: AssistantMessage,
        context: AgentContext,
        decisions: Mapping[str, Decision] | None = None,
    ) -> ToolBatch:
        """Point the batch at the calls of ``message`` (``decisions``: the held calls it
        resolves); return it."""
        runner = self._runner
        tools_before = runner.tools
        runner.for_reply(message, context)
        if runner.tools is not tools_before or decisions is not None or self._decisions is not None:
            self._holds = decisions is not None or any(
                getattr(tool, "requires_approval", False) is not False
                for tool in runner.tools.values()
            )
        self._decisions = decisions
        self._answers = None
        self.held = None
        return self

    async def run(self, calls: list[ToolCall]) -> tuple[list[ToolResultMessage], bool]:
        """Run the batch; return the tool result messages and whether to stop after it.

        Calls held for approval are left out (see :attr:`held`)."""
        if self._holds:
            calls = self._decide_holds(calls)
        if self._is_sequential(calls):
            messages, outcomes = await self._run_sequential(calls)
        else:
            outcomes = await self._run_parallel(calls)
            clock = self._config.clock
            messages = [
                tool_result_message(call, outcome, clock)
                for call, outcome in zip(calls, outcomes, strict=True)
            ]
            for index, message in enumerate(messages):
                if index % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1:
                    await anyio.lowlevel.checkpoint()
                await self._emit_result(message)
        terminate = all(outcome[0].terminate is True for outcome in outcomes)
        return messages, terminate

    async def refuse_truncated(self, calls: list[ToolCall]) -> list[ToolResultMessage]:
        """Answer the calls of a reply cut at the output limit without running any: their
        arguments may be cut too. Each gets its start, end and error result, in order."""
        messages: list[ToolResultMessage] = []
        for call in calls:
            await self._emit(ToolExecutionStart(call.id, call.name, call.arguments))
            outcome = truncated_outcome(call)
            await self._emit(ToolExecutionEnd(call.id, call.name, *outcome))
            message = tool_result_message(call, outcome, self._config.clock)
            await self._emit_result(message)
            messages.append(message)
        return messages

    # --- modes ----------------------------------------------------------------------------------

    def _is_sequential(self, calls: list[ToolCall]) -> bool:
        if self._config.tool_execution == "sequential":
            return True
        tools = self._runner.tools
        for call in calls:
            tool = tools.get(call.name)
            if tool is not None and tool.execution_mode == "sequential":
                return True
        return False

    async def _run_sequential(
        self, calls: list[ToolCall]
    ) -> tuple[list[ToolResultMessage], list[CallResult]]:
        """start → updates → end → toolResult message, one call after another."""
        messages: list[ToolResultMessage] = []
        outcomes: list[CallResult] = []
        for index, call in enumerate(calls):
            if index % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1:
                await anyio.lowlevel.checkpoint()  # calls refused in preflight never yield
            await self._emit(ToolExecutionStart(call.id, call.name, call.arguments))
            prepared = self._answer(call, index, len(calls)) or await self._runner.prepare(call)
            if isinstance(prepared, PreparedCall):
                if self._config.before_tool_batch is not None:
                    await self._before_tool_batch([call])
                [outcome] = await self._fan_out([prepared])
            else:
                outcome = prepared
            await self._emit(ToolExecutionEnd(call.id, call.name, *outcome))
            message = tool_result_message(call, outcome, self._config.clock)
            await self._emit_result(message)
            messages.append(message)
            outcomes.append(outcome)
        return messages, outcomes

    async def _run_parallel(self, calls: list[ToolCall]) -> list[CallResult]:
        """Sequential preflight, then every prepared call as a child task of the run's group."""
        outcomes: list[CallResult | None] = [None] * len(calls)
        runner = self._runner
        per_reply = self._config.max_tool_calls_per_reply
        jobs: list[PreparedCall] = []
        result_positions: list[int] = []
        for index, call in enumerate(calls):
            if index % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1:
                await anyio.lowlevel.checkpoint()
            await self._emit(ToolExecutionStart(call.id, call.name, call.arguments))
            if self._answers is None and (per_reply is None or index < per_reply):
                prepared = await runner.prepare(call)  # the usual case, without _answer's call
            else:
                prepared = self._answer(call, index, len(calls)) or await runner.prepare(call)
            if isinstance(prepared, PreparedCall):
                jobs.append(prepared)
                result_positions.append(index)
            else:
                outcomes[index] = prepared
                await self._emit(ToolExecutionEnd(call.id, call.name, *prepared))
        if jobs:
            if self._config.before_tool_batch is not None:
                await self._before_tool_batch([job.call for job in jobs])
            self._calls, self._result_positions = calls, result_positions
            self._outcomes = outcomes
            limit = self._config.max_parallel_tools
            limiter = anyio.CapacityLimiter(limit) if limit is not None else None
            await self._fan_out(jobs, self._on_complete, limiter)
        return outcomes  # type: ignore[return-value]  # every position is filled by now

    def _on_complete(self, job_index: int, outcome: CallResult) -> Awaitable[None]:
        # What the fan-out awaits is the emit itself: no coroutine of the batch's per call.
        index = self._result_positions[job_index]
        self._outcomes[index] = outcome
        call = self._calls[index]
        return self._emit(ToolExecutionEnd(call.id, call.name, *outcome))

    async def _before_tool_batch(self, calls: list[ToolCall]) -> None:
        hook = self._config.before_tool_batch
        assert hook is not None
        await call_hook(hook, calls)

    async def _emit_result(self, message: ToolResultMessage) -> None:
        await self._emit(MessageStart(message))
        await self._emit(MessageEnd(message))

    # --- approvals ------------------------------------------------------------------------------

    def _decide_holds(self, calls: list[ToolCall]) -> list[ToolCall]:
        """The calls that run now (in order); the others are held (:attr:`held`).

        A call is held after its arguments are validated and before any event of it: its tool's
        ``requires_approval`` says so, and no decision was made on it yet. A denied call, and
        one whose flag raised, is answered in preflight, with the events of any call.
        """
        decisions = self._decisions
        limit = self._config.max_tool_calls_per_reply
        answers: dict[str, CallResult] = {}
        held: list[PendingToolCall] = []
        kept = []
        for index, call in enumerate(calls):
            if limit is not None and index >= limit:
                # Answered for its place in the reply, which leaving held calls out would change.
                text = too_many_tool_calls_text(len(calls), limit)
                answers[call.id] = error_result(text), True, None
            elif decisions is not None and call.id in decisions:
                decision = decisions[call.id]
                if isinstance(decision, Deny):
                    text = tool_call_denied_text(decision.reason)
                    answers[call.id] = error_result(text), True, None
            else:
                pending = self._hold(call, answers)
                if pending is not None:
                    held.append(pending)
                    continue
            kept.append(call)
        self._answers = answers or None
        self.held = held or None
        return kept

    def _hold(self, call: ToolCall, answers: dict[str, CallResult]) -> PendingToolCall | None:
        """The held call, if ``call`` needs approval; a flag that raised answers it."""
        tool = self._runner.tools.get(call.name)
        if tool is None or getattr(tool, "requires_approval", False) is False:
            return None
        try:
            args = validate_tool_arguments(tool, prepared_call(tool, call))
        except Exception:
            return None  # preflight gives the call its error result
        try:
            held, reason = hold_verdict(tool, args)
        except Exception as exc:
            hook = "requires_approval"
            answers[call.id] = failed_outcome(exc, call, hook, self._config.interruptions)
            return None
        return PendingToolCall(call.id, call.name, args, reason) if held else None

    # --- preflight ------------------------------------------------------------------------------

    def _answer(self, call: ToolCall, index: int, count: int) -> CallResult | None:
        """The batch's own answer to a call, before the call's preflight: an abort, a decision
        or flag of approvals, the per-reply limit; ``None`` when the call goes on to preflight.

        ``index`` is the call's place among the ``count`` calls of the reply: one past the
        reply's limit is not run. Not a coroutine: the batch awaits the preflight itself, one
        frame less per call."""
        if self._runner.signal.aborted:
            return aborted_outcome()
        if self._answers is not None and call.id in self._answers:
            return self._answers[call.id]
        limit = self._config.max_tool_calls_per_reply
        if limit is not None and index >= limit:
            return error_result(too_many_tool_calls_text(count, limit)), True, None
        return None

    # --- execute --------------------------------------------------------------------------------

    def _fan_out(
        self,
        jobs: list[PreparedCall],
        on_complete: Callable[[int, CallResult], Awaitable[None]] | None = None,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> Awaitable[list[CallResult]]:
        """Run prepared calls as child tasks of the run's group; an abort cancels them."""
        runner = self._runner
        return fan_out(
            jobs,
            on_message=self._emit,
            on_complete=on_complete,
            limiter=limiter,
            task_group=self._task_group,
            signal=runner.signal if runner.abortable else None,
            aborted=_aborted_job_outcome,
        )


def tool_result_message(
    call: ToolCall, outcome: CallResult, clock: Callable[[], int]
) -> ToolResultMessage:
    """The toolResult message of a finalized call (``terminate`` stays out of it, as upstream)."""
    result, is_error, duration_ms = outcome
    return ToolResultMessage(
        call.id,
        call.name,
        result.content,
        result.details,
        is_error,
        clock(),
        result.usage,
        result.nested_calls,
        duration_ms,
    )
