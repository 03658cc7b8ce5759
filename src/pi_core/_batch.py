"""One tool batch: preflight, execute and finalize every tool call of an assistant message.

Parallel batches run each prepared call as a child task of the run's task group (see
:func:`pi_core.nursery.fan_out`) and wait for all of them; the parent task is the only one that
emits, so events stay in one total order while ``tool_execution_end`` follows completion and tool
results follow source order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from ._events import (
    AgentEvent,
    MessageEnd,
    MessageStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
)
from ._hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
    needs_await,
)
from ._interrupt import is_interruption
from ._log import TOOL, log_tool_failure
from ._messages import AgentContext, AssistantMessage, TextContent, ToolCall, ToolResultMessage
from ._texts import OPERATION_ABORTED, exception_text, tool_timed_out_text
from ._tools import AgentTool, AgentToolResult
from ._tracer import RunTrace
from ._validation import validate_tool_arguments
from .nursery import AbortSignal, Post, fan_out
from .nursery._cancel import is_stray_cancellation

__all__ = ["ToolBatch", "ToolCallAborted"]


Outcome = tuple[AgentToolResult, bool]
"""A finalized call: its result and whether it is an error."""

Emit = Callable[[AgentEvent], Awaitable[None]]


def error_result(text: str) -> AgentToolResult:
    """The result upstream gives a failed call: one text block, empty details, no terminate."""
    return AgentToolResult([TextContent(text)], {})


class ToolCallAborted(Exception):
    """Raised by a tool's ``execute`` when an abort has already stopped its call elsewhere (a
    durable run's recorded abort): the call ends as one the batch's abort cut, unlogged and
    unseen by ``after_tool_call``."""


def _aborted_outcome() -> Outcome:
    """The outcome of a call the abort stopped (or never let start)."""
    return error_result(OPERATION_ABORTED), True


def _aborted_job_outcome(_job_index: int) -> Outcome:
    """``fan_out``'s ``aborted(index)``: every aborted call gets the same outcome."""
    return _aborted_outcome()


def _failed_outcome(exc: Exception, call: ToolCall, hook: str) -> Outcome:
    """The error result of a call whose tool (``TOOL``) or ``hook`` raised, logged; an engine's
    interruption passes."""
    if is_interruption(exc):
        raise exc
    log_tool_failure(call, hook, exc)
    return error_result(exception_text(exc)), True


def _stray_cancellation_outcome(exc: BaseException, call: ToolCall, hook: str) -> Outcome:
    """A call's error outcome for a cancellation nothing sent it; re-raise anything else.

    A tool that awaits a task somebody else cancelled (asyncio) gets that task's
    ``CancelledError``: a failure of the tool, not the run's cancellation.
    """
    if not is_stray_cancellation(exc):
        raise exc
    log_tool_failure(call, hook, exc)
    return error_result(exception_text(exc)), True


class _Prepared:
    """A call that passed preflight: the job its batch fans out, and the tool's ``on_update``.

    One object does both, so a call in flight costs no partial and no bound method of the batch.
    """

    __slots__ = ("args", "batch", "call", "post", "tool")

    def __init__(self, batch: ToolBatch, call: ToolCall, tool: AgentTool, args: Any) -> None:
        self.batch = batch
        self.call = call
        self.tool = tool
        self.args = args
        self.post: Post[AgentEvent] | None = None
        """The running call's way to the parent, set when it starts."""

    async def __call__(self, post: Post[AgentEvent]) -> Outcome:
        """Execute the call, then let ``after_tool_call`` amend the outcome.

        Written out in one coroutine: this is the frame every call in flight holds.
        """
        batch = self.batch
        if batch._abortable and batch._aborted():
            # A call that waited for the limiter must not start at all after an abort; one that
            # runs is cancelled by it (see ``ToolBatch._fan_out``).
            return _aborted_outcome()
        self.post = post
        call, tool = self.call, self.tool
        returned: object = _TIMED_OUT
        try:
            if tool.timeout is None:
                returned = await tool.execute(call.id, self.args, batch._signal, self.on_update)
            else:
                with anyio.move_on_after(tool.timeout):
                    returned = await tool.execute(call.id, self.args, batch._signal, self.on_update)
            outcome = _as_outcome(tool, returned)
        except ToolCallAborted:
            return _aborted_outcome()
        except Exception as exc:
            outcome = _failed_outcome(exc, call, TOOL)
        except BaseException as exc:
            outcome = _stray_cancellation_outcome(exc, call, TOOL)
        if batch._config.after_tool_call is None:
            return outcome
        try:
            return await batch._after_tool_call(self, *outcome)
        except Exception as exc:
            return _failed_outcome(exc, call, "after_tool_call")
        except BaseException as exc:
            return _stray_cancellation_outcome(exc, call, "after_tool_call")

    def on_update(self, partial: AgentToolResult) -> None:
        """The ``on_update`` the tool gets: a ``tool_execution_update`` for the parent to emit."""
        call = self.call
        assert self.post is not None
        self.post(ToolExecutionUpdate(call.id, call.name, call.arguments, partial))


class _TracedPrepared(_Prepared):
    """A prepared call of a traced run: the trace's tool scope is current while it runs."""

    __slots__ = ()

    async def __call__(self, post: Post[AgentEvent]) -> Outcome:
        trace = self.batch._trace
        assert trace is not None
        with trace.tool_call(self.call):
            return await super().__call__(post)


class ToolBatch:
    """Runs the tool calls of one assistant message and returns their results in source order."""

    __slots__ = (
        "_abortable",
        "_calls",
        "_config",
        "_context",
        "_emit",
        "_message",
        "_outcomes",
        "_result_positions",
        "_signal",
        "_task_group",
        "_tools",
        "_trace",
    )

    # A parallel batch's bookkeeping, set when its calls start, for ``_on_complete``.
    _calls: list[ToolCall]
    _result_positions: list[int]
    """For each fanned-out job, the index of its call (and outcome) in the batch."""
    _outcomes: list[Outcome | None]

    def __init__(
        self,
        *,
        config: AgentLoopConfig,
        context: AgentContext,
        message: AssistantMessage,
        emit: Emit,
        signal: AbortSignal,
        abortable: bool,
        task_group: TaskGroup | None = None,
        trace: RunTrace | None = None,
    ) -> None:
        self._config = config
        self._context = context
        self._message = message
        self._emit = emit
        self._signal = signal
        self._abortable = abortable
        self._task_group = task_group
        self._trace = trace
        self._tools: dict[str, AgentTool] = {}
        for tool in reversed(context.tools):  # the first tool of a name wins, as upstream
            self._tools[tool.name] = tool

    async def run(self, calls: list[ToolCall]) -> tuple[list[ToolResultMessage], bool]:
        """Run the batch; return the tool result messages and whether to stop after it."""
        if self._is_sequential(calls):
            messages, outcomes = await self._run_sequential(calls)
        else:
            outcomes = await self._run_parallel(calls)
            clock = self._config.clock
            messages = [
                tool_result_message(call, outcome, clock)
                for call, outcome in zip(calls, outcomes, strict=True)
            ]
            for message in messages:
                await self._emit_result(message)
        terminate = all(result.terminate is True for result, _ in outcomes)
        return messages, terminate

    # --- modes ----------------------------------------------------------------------------------

    def _is_sequential(self, calls: list[ToolCall]) -> bool:
        if self._config.tool_execution == "sequential":
            return True
        tools = self._tools
        for call in calls:
            tool = tools.get(call.name)
            if tool is not None and tool.execution_mode == "sequential":
                return True
        return False

    async def _run_sequential(
        self, calls: list[ToolCall]
    ) -> tuple[list[ToolResultMessage], list[Outcome]]:
        """start → updates → end → toolResult message, one call after another."""
        messages: list[ToolResultMessage] = []
        outcomes: list[Outcome] = []
        for call in calls:
            await self._emit(ToolExecutionStart(call.id, call.name, call.arguments))
            prepared = await self._preflight(call)
            if isinstance(prepared, _Prepared):
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

    async def _run_parallel(self, calls: list[ToolCall]) -> list[Outcome]:
        """Sequential preflight, then every prepared call as a child task of the run's group."""
        outcomes: list[Outcome | None] = [None] * len(calls)
        jobs: list[_Prepared] = []
        result_positions: list[int] = []
        for index, call in enumerate(calls):
            await self._emit(ToolExecutionStart(call.id, call.name, call.arguments))
            prepared = await self._preflight(call)
            if isinstance(prepared, _Prepared):
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

    def _on_complete(self, job_index: int, outcome: Outcome) -> Awaitable[None]:
        # What the fan-out awaits is the emit itself: no coroutine of the batch's per call.
        index = self._result_positions[job_index]
        self._outcomes[index] = outcome
        call = self._calls[index]
        return self._emit(ToolExecutionEnd(call.id, call.name, *outcome))

    async def _before_tool_batch(self, calls: list[ToolCall]) -> None:
        hook = self._config.before_tool_batch
        assert hook is not None
        returned = hook(calls)
        if needs_await(returned):
            await returned

    async def _emit_result(self, message: ToolResultMessage) -> None:
        await self._emit(MessageStart(message))
        await self._emit(MessageEnd(message))

    # --- preflight ------------------------------------------------------------------------------

    async def _preflight(self, call: ToolCall) -> _Prepared | Outcome:
        """Find the tool, prepare and validate the arguments, ask ``before_tool_call``."""
        if self._aborted():
            return _aborted_outcome()
        tool = self._tools.get(call.name)
        if tool is None:
            return error_result(f"Tool {call.name} not found"), True
        try:
            args = validate_tool_arguments(tool, self._prepared_call(tool, call))
            verdict = None
            if self._config.before_tool_call is not None:
                verdict = await self._before_tool_call(call, args)
        except Exception as exc:
            return _failed_outcome(exc, call, "Argument preparation or before_tool_call")
        except BaseException as exc:
            if not is_stray_cancellation(exc, native_cancel_possible=True):
                raise
            return error_result(exception_text(exc)), True
        if self._aborted():  # the hook ran while the abort came
            return _aborted_outcome()
        if verdict is not None and verdict.block:
            return error_result(verdict.reason or "Tool execution was blocked"), True
        if self._trace is None:
            return _Prepared(self, call, tool, args)
        return _TracedPrepared(self, call, tool, args)

    def _aborted(self) -> bool:
        return self._signal.aborted

    @staticmethod
    def _prepared_call(tool: AgentTool, call: ToolCall) -> ToolCall:
        if tool.prepare_arguments is None:
            return call
        arguments = tool.prepare_arguments(call.arguments)
        if arguments is call.arguments:
            return call
        return ToolCall(call.id, call.name, arguments, call.thought_signature)

    async def _before_tool_call(self, call: ToolCall, args: Any) -> BeforeToolCallResult | None:
        hook = self._config.before_tool_call
        assert hook is not None
        context = BeforeToolCallContext(self._message, call, args, self._context)
        verdict = hook(context, self._signal)
        if needs_await(verdict):
            verdict = await self._abortable_await(verdict)
        return verdict

    async def _abortable_await(self, awaitable: Awaitable[Any]) -> Any:
        """Await a hook so that an abort cancels it at once; an aborted hook returns ``None``."""
        if not self._abortable:
            return await awaitable
        with self._signal.scope():
            return await awaitable
        return None

    # --- execute and finalize -------------------------------------------------------------------

    def _fan_out(
        self,
        jobs: list[_Prepared],
        on_complete: Callable[[int, Outcome], Awaitable[None]] | None = None,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> Awaitable[list[Outcome]]:
        """Run prepared calls as child tasks of the run's group; an abort cancels them."""
        return fan_out(
            jobs,
            on_message=self._emit,
            on_complete=on_complete,
            limiter=limiter,
            task_group=self._task_group,
            signal=self._signal if self._abortable else None,
            aborted=_aborted_job_outcome,
        )

    async def _after_tool_call(
        self, prepared: _Prepared, result: AgentToolResult, is_error: bool
    ) -> Outcome:
        hook = self._config.after_tool_call
        assert hook is not None
        context = AfterToolCallContext(
            self._message, prepared.call, prepared.args, result, is_error, self._context
        )
        override = hook(context, self._signal)
        if needs_await(override):
            override = await override
        if override is None:
            return result, is_error
        return _merge(result, is_error, override)


def tool_result_message(
    call: ToolCall, outcome: Outcome, clock: Callable[[], int]
) -> ToolResultMessage:
    """The toolResult message of a finalized call (``terminate`` stays out of it, as upstream)."""
    result, is_error = outcome
    return ToolResultMessage(call.id, call.name, result.content, result.details, is_error, clock())


_TIMED_OUT: Final = object()
"""What a call returned when its ``timeout`` cut it short."""


def _as_outcome(tool: AgentTool, returned: object) -> Outcome:
    if isinstance(returned, AgentToolResult):
        return returned, False
    if isinstance(returned, str):
        return AgentToolResult([TextContent(returned)]), False
    if returned is _TIMED_OUT:
        assert tool.timeout is not None  # only a timeout makes this sentinel
        return error_result(tool_timed_out_text(tool.name, tool.timeout)), True
    raise TypeError(
        f"Tool {tool.name} returned {type(returned).__name__}, expected AgentToolResult or str"
    )


def _merge(result: AgentToolResult, is_error: bool, override: AfterToolCallResult) -> Outcome:
    """Upstream's ``??`` merge: every field of the override that is not ``None`` wins."""
    merged = AgentToolResult(
        result.content if override.content is None else override.content,
        result.details if override.details is None else override.details,
        result.terminate if override.terminate is None else override.terminate,
    )
    return merged, is_error if override.is_error is None else override.is_error
