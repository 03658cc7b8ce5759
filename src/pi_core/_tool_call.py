"""One tool call: lookup, validation, ``before_tool_call``, execution, ``after_tool_call``.

The rules of a single call live here once. A batch (:mod:`pi_core._batch`) runs them for every
call of a reply and adds what belongs to a batch: the events, the fan-out, approvals and the
per-reply limit. :func:`run_tool_call` runs them for one call, emitting nothing.

A call's outcome is a plain ``(result, is_error, duration_ms)`` tuple on the hot path; the
public :class:`ToolCallOutcome` is made only by :func:`run_tool_call`. ``duration_ms`` is the
time spent in ``execute``, on a monotonic clock, and ``None`` when ``execute`` did not run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from time import perf_counter_ns
from typing import Any, Final

import anyio
import attrs

from ._blocking import watched_tool
from ._events import AgentEvent, ToolExecutionUpdate
from ._hooks import (
    AfterToolCall,
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCall,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from ._log import TOOL, log_tool_failure
from ._maybe_async import call_hook, needs_await, result_of
from ._messages import AgentContext, AssistantMessage, TextContent, ToolCall
from ._run_group import DEBUG
from ._texts import (
    OPERATION_ABORTED,
    exception_text,
    tool_timed_out_text,
    truncated_tool_call_text,
)
from ._tool_result import json_result
from ._tools import AgentTool, AgentToolResult, ToolUpdateCallback, prepared_call
from ._tracer import RunTrace
from ._validation import validate_tool_arguments
from .nursery import AbortSignal, Post
from .nursery._cancel import is_stray_cancellation

__all__ = [
    "CallResult",
    "PreparedCall",
    "RecordedCall",
    "RecordedFailure",
    "ToolCallAborted",
    "ToolCallOutcome",
    "ToolCallRunner",
    "aborted_outcome",
    "error_result",
    "failed_outcome",
    "run_tool_call",
    "truncated_outcome",
]

CallResult = tuple[AgentToolResult, bool, "float | None"]
"""A finalized call: its result, whether it is an error, and the milliseconds ``execute`` ran
(``None`` when it did not run)."""


@attrs.frozen
class ToolCallOutcome:
    """What :func:`run_tool_call` returns: the call, its final result and how long it ran."""

    tool_call: ToolCall
    result: AgentToolResult = attrs.field(hash=False)
    is_error: bool
    duration_ms: float | None = None
    """Milliseconds spent in ``execute`` (monotonic); ``None`` when the call did not run."""


@attrs.frozen
class RecordedCall:
    """What an engine's ``execute`` returns for a call whose outcome it recorded: the value the
    tool returned (as ``execute`` returns it), and the milliseconds it ran when it ran.

    The call's ``duration_ms`` is that one, not the moment the engine took to hand the record
    back: a replayed run reports the durations the first one measured.
    """

    value: object
    duration_ms: float | None


class RecordedFailure(Exception):
    """Raised by an engine's ``execute`` for a call whose recorded outcome is a failure: the
    call ends as the error result ``text`` (logged as a raising tool is), with the
    ``duration_ms`` recorded when it ran."""

    def __init__(self, text: str, duration_ms: float | None) -> None:
        super().__init__(text)
        self.duration_ms = duration_ms


class ToolCallAborted(Exception):
    """Raised by a tool's ``execute`` when an abort has already stopped its call elsewhere (a
    durable run's recorded abort): the call ends as one the batch's abort cut, unlogged and
    unseen by ``after_tool_call``."""


def error_result(text: str) -> AgentToolResult:
    """The result upstream gives a failed call: one text block, empty details, no terminate."""
    return AgentToolResult([TextContent(text)], {})


def aborted_outcome() -> CallResult:
    """The outcome of a call the abort stopped (or never let start)."""
    return error_result(OPERATION_ABORTED), True, None


def truncated_outcome(call: ToolCall) -> CallResult:
    """The outcome of a call in a reply cut at the output limit: its arguments may be partial,
    so it is not run."""
    return error_result(truncated_tool_call_text(call.name)), True, None


def failed_outcome(
    exc: Exception,
    call: ToolCall,
    hook: str,
    interruptions: tuple[type[BaseException], ...],
    duration_ms: float | None = None,
) -> CallResult:
    """The error result of a call whose tool (``TOOL``) or ``hook`` raised, logged; one of the
    engine's ``interruptions`` passes."""
    if isinstance(exc, interruptions):
        raise exc
    log_tool_failure(call, hook, exc)
    return error_result(exception_text(exc)), True, duration_ms


def _stray_cancellation_outcome(
    exc: BaseException, call: ToolCall, hook: str, duration_ms: float | None = None
) -> CallResult:
    """A call's error outcome for a cancellation nothing sent it; re-raise anything else.

    A tool that awaits a task somebody else cancelled (asyncio) gets that task's
    ``CancelledError``: a failure of the tool, not the run's cancellation.
    """
    if not is_stray_cancellation(exc):
        raise exc
    log_tool_failure(call, hook, exc)
    return error_result(exception_text(exc)), True, duration_ms


def _elapsed_ms(started_ns: int) -> int:
    """Whole milliseconds since ``started_ns`` (``perf_counter_ns``), as upstream rounds them."""
    return (perf_counter_ns() - started_ns + 500_000) // 1_000_000


class ToolCallRunner:
    """What one call needs to run: the tools by name, the hooks, the signal, the reply and the
    context it belongs to. A run keeps one and points it at each reply (:meth:`for_reply`)."""

    __slots__ = (
        "_tool_ids",
        "_tool_list",
        "abortable",
        "after_tool_call",
        "before_tool_call",
        "context",
        "interruptions",
        "message",
        "signal",
        "tools",
        "trace",
    )

    def __init__(
        self,
        *,
        signal: AbortSignal,
        abortable: bool = True,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        interruptions: tuple[type[BaseException], ...] = (),
        trace: RunTrace | None = None,
    ) -> None:
        self.signal = signal
        self.abortable = abortable
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.interruptions = interruptions
        self.trace = trace
        self.tools: dict[str, AgentTool] = {}
        self._tool_list: list[AgentTool] = []
        """The tools :attr:`tools` was made from, as they were then (kept alive: see
        :meth:`for_reply`)."""
        self._tool_ids: tuple[int, ...] | None = None
        self.message: AssistantMessage | None = None
        self.context: AgentContext | None = None

    def for_reply(self, message: AssistantMessage, context: AgentContext) -> None:
        """Point the runner at the calls of ``message``, made in ``context``.

        The name lookup is rebuilt only when the context's tools are not the same objects as
        last time (a hook may replace the context, or change its tool list in place): comparing
        their ids is one C loop, much cheaper than building the lookup again every turn. The
        ids cannot be reused meanwhile, since the runner holds the tools they were taken of.
        """
        self.message = message
        self.context = context
        tools = context.tools
        ids = tuple(map(id, tools))
        if ids != self._tool_ids:
            self._set_tools(tools, ids)

    def _set_tools(self, tools: Sequence[AgentTool], ids: tuple[int, ...]) -> None:
        lookup: dict[str, AgentTool] = {}
        for tool in reversed(tools):  # the first tool of a name wins, as upstream
            lookup[tool.name] = tool
        if DEBUG:  # warn about tools that hold the event loop
            lookup = {name: watched_tool(tool) for name, tool in lookup.items()}
        self.tools = lookup
        self._tool_list = list(tools)
        self._tool_ids = ids

    def aborted(self) -> bool:
        """Whether the run (or the caller) has aborted by now."""
        return self.signal.aborted

    # --- preflight ------------------------------------------------------------------------------

    async def prepare(self, call: ToolCall) -> PreparedCall | CallResult:
        """Find the tool, prepare and validate the arguments, ask ``before_tool_call``.

        The prepared call, or the outcome of a call that will not run (aborted, unknown tool,
        invalid arguments, blocked).
        """
        if self.signal.aborted:
            return aborted_outcome()
        tool = self.tools.get(call.name)
        if tool is None:
            return error_result(f"Tool {call.name} not found"), True, None
        try:
            args = validate_tool_arguments(tool, prepared_call(tool, call))
            verdict = None
            if self.before_tool_call is not None:
                verdict = await self._before_tool_call(call, args)
        except Exception as exc:
            hook = "Argument preparation or before_tool_call"
            return failed_outcome(exc, call, hook, self.interruptions)
        except BaseException as exc:
            if not is_stray_cancellation(exc, native_cancel_possible=True):
                raise
            return error_result(exception_text(exc)), True, None
        if self.aborted():  # the hook ran while the abort came
            return aborted_outcome()
        if verdict is not None and verdict.block:
            return error_result(verdict.reason or "Tool execution was blocked"), True, None
        if self.trace is None:
            return PreparedCall(self, call, tool, args)
        return _TracedCall(self, call, tool, args)

    async def _before_tool_call(self, call: ToolCall, args: Any) -> BeforeToolCallResult | None:
        hook = self.before_tool_call
        assert hook is not None and self.message is not None and self.context is not None
        context = BeforeToolCallContext(self.message, call, args, self.context)
        verdict = hook(context, self.signal)
        if needs_await(verdict):
            verdict = await self._abortable_await(verdict)
        return result_of(verdict, BeforeToolCallResult)

    async def _abortable_await(self, awaitable: Awaitable[Any]) -> Any:
        """Await a hook so that an abort cancels it at once; an aborted hook returns ``None``."""
        if not self.abortable:
            return await awaitable
        with self.signal.scope():
            return await awaitable
        return None

    # --- finalize -------------------------------------------------------------------------------

    async def after(self, prepared: PreparedCall, outcome: CallResult) -> CallResult:
        """Let ``after_tool_call`` amend an executed call's outcome."""
        hook = self.after_tool_call
        assert hook is not None and self.message is not None and self.context is not None
        result, is_error, duration_ms = outcome
        context = AfterToolCallContext(
            self.message, prepared.call, prepared.args, result, is_error, self.context
        )
        override = result_of(await call_hook(hook, context, self.signal), AfterToolCallResult)
        if override is None:
            return outcome
        return _merge(result, is_error, duration_ms, override)


class PreparedCall:
    """A call that passed preflight: calling it runs ``execute`` and ``after_tool_call``.

    It is also the tool's ``on_update``, and a batch fans it out as is, so a call in flight
    costs no partial and no bound method of the batch.
    """

    __slots__ = ("args", "call", "post", "runner", "tool")

    def __init__(self, runner: ToolCallRunner, call: ToolCall, tool: AgentTool, args: Any) -> None:
        self.runner = runner
        self.call = call
        self.tool = tool
        self.args = args
        self.post: Post[AgentEvent] | None = None
        """The running call's way to whoever reports its updates, set when it starts."""

    async def __call__(self, post: Post[AgentEvent]) -> CallResult:
        """Execute the call, then let ``after_tool_call`` amend the outcome.

        Written out in one coroutine: this is the frame every call in flight holds.
        """
        runner = self.runner
        if runner.abortable and runner.signal.aborted:
            # A call that waited for the limiter must not start at all after an abort; one that
            # runs is cancelled by it.
            return aborted_outcome()
        self.post = post
        call, tool = self.call, self.tool
        returned: object = _TIMED_OUT
        started = perf_counter_ns()
        try:
            if tool.timeout is None:
                returned = await tool.execute(call.id, self.args, runner.signal, self.on_update)
            else:
                with anyio.move_on_after(tool.timeout):
                    returned = await tool.execute(call.id, self.args, runner.signal, self.on_update)
            # Whole milliseconds, rounded as upstream does; written out: one call less per call.
            outcome = _as_outcome(
                tool, returned, (perf_counter_ns() - started + 500_000) // 1_000_000
            )
        except ToolCallAborted:
            return aborted_outcome()
        except Exception as exc:
            elapsed = exc.duration_ms if type(exc) is RecordedFailure else _elapsed_ms(started)
            outcome = failed_outcome(exc, call, TOOL, runner.interruptions, elapsed)
        except BaseException as exc:
            outcome = _stray_cancellation_outcome(exc, call, TOOL, _elapsed_ms(started))
        finally:
            self.post = None  # the call has settled: an update that comes later is ignored
        if runner.after_tool_call is None:
            return outcome
        try:
            return await runner.after(self, outcome)
        except Exception as exc:
            return failed_outcome(exc, call, "after_tool_call", runner.interruptions, outcome[2])
        except BaseException as exc:
            return _stray_cancellation_outcome(exc, call, "after_tool_call", outcome[2])

    def on_update(self, partial: AgentToolResult) -> None:
        """The ``on_update`` the tool gets: a ``tool_execution_update`` for the parent to emit,
        while the call runs (once it has settled, an update is dropped)."""
        post = self.post
        if post is not None:
            call = self.call
            post(ToolExecutionUpdate(call.id, call.name, call.arguments, partial))


class _TracedCall(PreparedCall):
    """A prepared call of a traced run: the trace's tool scope is current while it runs."""

    __slots__ = ()

    async def __call__(self, post: Post[AgentEvent]) -> CallResult:
        trace = self.runner.trace
        assert trace is not None
        with trace.tool_call(self.call):
            return await super().__call__(post)


_TIMED_OUT: Final = object()
"""What a call returned when its ``timeout`` cut it short."""


def _as_outcome(tool: AgentTool, returned: object, duration_ms: float) -> CallResult:
    if isinstance(returned, AgentToolResult):
        return returned, returned.is_error, duration_ms
    if isinstance(returned, str):
        return AgentToolResult([TextContent(returned)]), False, duration_ms
    if type(returned) is RecordedCall:
        return _as_outcome(tool, returned.value, returned.duration_ms)  # type: ignore[arg-type]
    if returned is _TIMED_OUT:
        assert tool.timeout is not None  # only a timeout makes this sentinel
        return error_result(tool_timed_out_text(tool.name, tool.timeout)), True, duration_ms
    return json_result(tool.name, returned), False, duration_ms


def _merge(
    result: AgentToolResult,
    is_error: bool,
    duration_ms: float | None,
    override: AfterToolCallResult,
) -> CallResult:
    """Upstream's ``??`` merge: every field of the override that is not ``None`` wins."""
    merged = AgentToolResult(
        result.content if override.content is None else override.content,
        result.details if override.details is None else override.details,
        result.terminate if override.terminate is None else override.terminate,
        usage=result.usage,
        nested_calls=result.nested_calls,
        is_error=result.is_error,
    )
    return merged, is_error if override.is_error is None else override.is_error, duration_ms


async def run_tool_call(
    tool_call: ToolCall,
    *,
    tools: Sequence[AgentTool],
    assistant_message: AssistantMessage,
    context: AgentContext,
    signal: AbortSignal | None = None,
    on_update: ToolUpdateCallback | None = None,
    before_tool_call: BeforeToolCall | None = None,
    after_tool_call: AfterToolCall | None = None,
) -> ToolCallOutcome:
    """Run one tool call as a batch runs each of its calls, emitting no events.

    The call goes through the same steps as in a run: the tool is looked up by name in
    ``tools``, its arguments are prepared and validated, ``before_tool_call`` may block it,
    ``execute`` runs (with the tool's ``timeout``), and ``after_tool_call`` may amend the result.
    The call's own failures (an unknown tool, invalid arguments, a raising tool or hook, a
    timeout, an abort through ``signal``) become an error result; nothing is raised for them.
    ``on_update`` receives the tool's progress reports.
    """
    runner = ToolCallRunner(
        signal=signal if signal is not None else AbortSignal(),
        abortable=signal is not None,
        before_tool_call=before_tool_call,
        after_tool_call=after_tool_call,
    )
    runner.for_reply(assistant_message, attrs.evolve(context, tools=list(tools)))
    prepared = await runner.prepare(tool_call)
    if isinstance(prepared, PreparedCall):
        prepared = await _run_alone(prepared, on_update)
    result, is_error, duration_ms = prepared
    return ToolCallOutcome(tool_call, result, is_error, duration_ms)


async def _run_alone(prepared: PreparedCall, on_update: ToolUpdateCallback | None) -> CallResult:
    """Execute a prepared call in the caller's task; an abort of its signal cuts it short."""

    def post(event: AgentEvent) -> None:
        if on_update is not None and isinstance(event, ToolExecutionUpdate):
            on_update(event.partial_result)

    runner = prepared.runner
    if not runner.abortable:
        return await prepared(post)
    outcome: CallResult | None = None
    with runner.signal.scope():
        outcome = await prepared(post)
    return outcome if outcome is not None else aborted_outcome()
