"""The agent loop: turns of one model call and its tool batch, until the model stops asking.

A run is one structured-concurrency tree. It emits every event through one awaited ``emit``; an
abort cancels the running phase (the model stream, the running tools, awaited tool hooks) and the
run then closes out in order, outside the cancelled scope. Which scope the abort cancels in each
phase, and the invariant the model call relies on (the run's task group holds no other task
while the model streams), are set out once, in docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from time import perf_counter_ns
from typing import Any, cast

import anyio
import anyio.lowlevel
import attrs
from anyio.abc import TaskGroup

from ._approvals import Decision, PendingToolCall, check_decisions, pending_tool_calls
from ._batch import ToolBatch
from ._events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    AssistantMessageEvent,
    AwaitingEmit,
    Emit,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    TurnEnd,
    TurnStart,
)
from ._hooks import (
    AgentLoopConfig,
    NextTurn,
    RequestContext,
    RequestUpdate,
    TurnContext,
    TurnDecision,
)
from ._log import log_model_failure
from ._maybe_async import awaiting, call_hook, needs_await, result_of
from ._messages import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    Context,
    Model,
    StopReason,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    failed_reply,
    now_ms,
)
from ._options import StreamFn, StreamOptions, close_stream, open_stream
from ._output import OutputAttempts
from ._run_control import CURRENT_RUN_CONTROL, RunControl, control_for
from ._run_group import DEBUG, WatchedTaskGroup
from ._texts import NO_TERMINAL_EVENT, REQUEST_ABORTED, exception_text
from ._tool_declarations import ToolDeclarations
from ._tracer import RunTrace, RunTracer
from .nursery import AbortSignal, EventStream, open_event_stream, unwrap_single_exception
from .nursery._cancel import is_stray_cancellation

__all__ = [
    "AgentEventStream",
    "ReplyReader",
    "agent_loop",
    "agent_loop_continue",
    "resolve_tool_calls",
    "run_agent_loop",
    "run_agent_loop_continue",
]

_MALFORMED_TEXT = "Malformed stream"


class AgentEventStream(EventStream[AgentEvent, list[AgentMessage]]):
    """The events of a run, as handed out by :func:`agent_loop`.

    Iterate it with ``async for``; ``await events.result()`` drains what is left and returns the
    run's new messages.
    """

    __slots__ = ()


async def run_agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    *,
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Run the agent on ``prompts`` after ``context``; return the run's new messages.

    ``emit`` receives every event in one total order and is awaited before the run goes on. The
    caller's ``context.messages`` list is not changed.
    """
    return await run_loop(prompts, context, config, awaiting(emit), signal)


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    *,
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Continue from ``context`` as it is (its last message must not be the assistant's).

    Raises:
        ValueError: the context is empty, or ends with an assistant message.
    """
    check_can_continue(context)
    return await run_loop((), context, config, awaiting(emit), signal)


async def resolve_tool_calls(
    decisions: Mapping[str, Decision],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Emit,
    *,
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Decide the tool calls ``context`` holds for approval, then go on with the run.

    The held calls are those of the last assistant reply that have no result
    (:func:`~pi_core.pending_tool_calls`). An approved call runs as any call does (its
    ``tool_execution_start``, ``before_tool_call``, execution and ``tool_execution_end``); a
    denied one is answered ``Tool call denied[: reason]``, with its start and end events; then
    the run makes its next request. Returns the run's new messages.

    Raises:
        ValueError: nothing is held, a held call has no decision, a decision names a call that
            is not held, or a value is not an ``Approve()`` or ``Deny(...)``.
    """
    checked = check_held_decisions(decisions, pending_tool_calls(context.messages, context.tools))
    return await run_loop((), context, config, awaiting(emit), signal, decisions=checked)


def check_held_decisions(
    decisions: Mapping[str, object], pending: Sequence[PendingToolCall]
) -> dict[str, Decision]:
    """``decisions`` checked against the held calls (``ValueError`` if there are none)."""
    if not pending:
        raise ValueError("Cannot resolve: no tool calls are waiting for a decision")
    return check_decisions(decisions, pending)


async def run_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: AwaitingEmit,
    signal: AbortSignal | None,
    control: RunControl | None = None,
    decisions: Mapping[str, Decision] | None = None,
) -> list[AgentMessage]:
    """Run on ``prompts``, or continue from ``context`` when there are none (checked already).

    What ``emit`` returns is awaited as it is: the run adds no coroutine of its own to any event.
    ``control`` is the owner's handle (a stop, the limits); without one, a run with limits makes
    its own. ``decisions`` resolves the calls the context holds (checked already) before the
    first request.
    """
    if control is None and config.limits is not None:
        control, signal = control_for(config.limits, signal)
    run = _Run(context, config, emit, signal, [], control, decisions)
    if prompts:  # a change of the tools is declared first, before the prompts
        prompts = run.tool_declarations.declare(run.context, prompts, config.clock)
        run.new_messages.extend(prompts)
        run.context.messages.extend(prompts)
    if config.tracer is None:
        await run.run(prompts)
    else:
        await _run_traced(run, config.tracer, prompts)
    return run.new_messages


async def _run_traced(run: _Run, tracer: RunTracer, prompts: Sequence[AgentMessage]) -> None:
    """Run inside the tracer's trace, which sees every event before it is emitted."""
    trace = tracer.trace_run(run.model, run.signal)
    emit = run.emit

    def traced_emit(event: AgentEvent) -> Awaitable[None]:
        trace.on_event(event)
        return emit(event)

    with trace:
        run.trace = trace
        run.emit = traced_emit
        run.config = attrs.evolve(run.config, stream_fn=_traced_stream(run.config.stream_fn, trace))
        await run.run(prompts)


def _traced_stream(stream_fn: StreamFn, trace: RunTrace) -> StreamFn:
    """``stream_fn`` inside the trace's model-call scope, for the call and all its events."""

    async def traced(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        with trace.model_call(model, context):
            iterator = await open_stream(stream_fn, model, context, options)
            try:
                async for event in iterator:
                    yield event
            finally:
                await close_stream(iterator)

    return traced


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    signal: AbortSignal | None = None,
    buffer_size: int = 64,
) -> AbstractAsyncContextManager[AgentEventStream]:
    """``async with agent_loop(...) as events``: the run's events as an async iterator.

    The run is a child task of the block. It may be up to ``buffer_size`` events ahead of the
    consumer, so an abort issued by the consumer acts where the run is, not where the consumer has
    read to. Leaving the block before the run ends cancels the run; an exception of the run
    propagates out of the block.
    """

    async def produce(emit: Callable[[AgentEvent], Awaitable[None]]) -> list[AgentMessage]:
        return await run_agent_loop(prompts, context, config, emit, signal=signal)

    stream = open_event_stream(produce, buffer_size, stream_type=AgentEventStream)
    return cast("AbstractAsyncContextManager[AgentEventStream]", stream)


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    signal: AbortSignal | None = None,
    buffer_size: int = 64,
) -> AbstractAsyncContextManager[AgentEventStream]:
    """The event-stream form of :func:`run_agent_loop_continue`; validates before returning.

    Raises:
        ValueError: the context is empty, or ends with an assistant message.
    """
    check_can_continue(context)

    async def produce(emit: Callable[[AgentEvent], Awaitable[None]]) -> list[AgentMessage]:
        return await run_agent_loop_continue(context, config, emit, signal=signal)

    stream = open_event_stream(produce, buffer_size, stream_type=AgentEventStream)
    return cast("AbstractAsyncContextManager[AgentEventStream]", stream)


def check_can_continue(context: AgentContext) -> None:
    """Raise upstream's ``ValueError`` unless a continuation can start from ``context``."""
    if not context.messages:
        raise ValueError("Cannot continue: no messages in context")
    if context.messages[-1].role == "assistant":
        raise ValueError("Cannot continue from message role: assistant")


class _Run:
    """The state of one run: its working context, new messages, options and abort plumbing."""

    __slots__ = (
        "_batch",
        "_has_turn_hooks",
        "_reader",
        "abortable",
        "config",
        "context",
        "control",
        "decisions",
        "emit",
        "held",
        "model",
        "new_messages",
        "options",
        "output",
        "signal",
        "task_group",
        "tool_declarations",
        "trace",
        "watch",
    )

    def __init__(
        self,
        context: AgentContext,
        config: AgentLoopConfig,
        emit: AwaitingEmit,
        signal: AbortSignal | None,
        new_messages: list[AgentMessage],
        control: RunControl | None = None,
        decisions: Mapping[str, Decision] | None = None,
    ) -> None:
        self.context = AgentContext(context.system_prompt, list(context.messages), context.tools)
        self.config = config
        self.control = control
        self.decisions = decisions
        """The decisions on the held calls that the run resolves first, if it resumes."""
        self.held: list[PendingToolCall] | None = None
        """The calls the last batch held for approval: the run ends after that turn."""
        self.model = config.model
        self.new_messages = new_messages
        self.emit = emit
        # Tools always get a signal; without one from the caller nothing can abort, so the
        # run skips its abort plumbing altogether.
        self.abortable = signal is not None
        self.signal = signal if signal is not None else AbortSignal()
        self.options = attrs.evolve(config.options, signal=self.signal)
        self._reader = _TurnReader(self)
        self.output: OutputAttempts | None = None
        """The run's attempts at its typed answer, if it asks for one."""
        if config.output is not None:
            self.output = OutputAttempts(config.output, config.clock)
            self.context = self.output.with_tool(self.context)
        self._has_turn_hooks = (
            config.prepare_next_turn is not None
            or config.should_stop_after_turn is not None
            or config.finish_turn is not None
        )
        self._batch: ToolBatch | None = None
        """The run's tool batch, made at its first tool call and pointed at each reply."""
        self.tool_declarations = ToolDeclarations()
        """What the transcript declares of the tools, followed turn by turn."""
        self.task_group: TaskGroup | None = None
        self.trace: RunTrace | None = None
        self.watch: WatchedTaskGroup | None = None
        """The task group again, in debug runs, to check that the model streams alone in it."""

    async def run(self, prompts: Sequence[AgentMessage]) -> None:
        """Emit the opening events (with the prompts, if any), then run the turns.

        The run's task group lives as long as the run: every tool batch spawns its calls into it
        rather than opening a group of its own each turn.
        """
        with unwrap_single_exception():
            async with anyio.create_task_group() as task_group:
                self.task_group = task_group
                if DEBUG:
                    self.task_group = self.watch = WatchedTaskGroup(task_group)
                await self.emit(AgentStart())
                await self.emit(TurnStart())
                for prompt in prompts:
                    await self.emit(MessageStart(prompt))
                    await self.emit(MessageEnd(prompt))
                control = self.control
                if control is None:
                    await self.run_turns()
                else:
                    control.attach(task_group)
                    # Its tools' tasks inherit it: a sub-agent started there finds the run.
                    current = CURRENT_RUN_CONTROL.set(control)
                    try:
                        await self.run_turns()
                    finally:
                        CURRENT_RUN_CONTROL.reset(current)
                    control.detach()
        if self._reader.cut:
            # An abort cut the model stream by cancelling the group: close out outside it.
            await self._end(await self._reader.finish(self._reader.aborted_message()))

    # --- turns ----------------------------------------------------------------------------------

    async def run_turns(self) -> None:
        """Upstream's ``runLoop``, plus the abort checks of the close-out.

        After a turn's tool calls: ``finish_turn``, ``turn_end``, the run's own reasons to end
        (an abort, held calls, a limit, an ``"end"`` decision, ``should_stop_after_turn``), the
        steering poll; then, when another turn follows, ``prepare_next_turn`` before its
        ``turn_start``.
        """
        first_turn = True
        config = self.config
        control = self.control
        decisions = self.decisions
        clock = self.config.clock
        # Resolving held calls comes first: nothing may come between a reply and its results.
        pending = () if decisions else await self._poll(config.get_steering_messages)
        last_turn: TurnContext | None = None
        """The turn just ended, for ``prepare_next_turn`` (kept only when that hook is set)."""
        explicit_continue = False
        while True:
            has_more_tool_calls = True
            while has_more_tool_calls or pending:
                prepared: Sequence[AgentMessage] = ()
                if first_turn:
                    first_turn = False
                else:
                    if last_turn is not None:
                        prepared = await self._prepare_next_turn(last_turn)
                        if not pending:  # preparing may take long: steering may have come
                            pending = await self._poll(config.get_steering_messages)
                    await self.emit(TurnStart())
                # What prepare_next_turn adds goes before the steering messages, and the tool
                # changes are declared before both.
                injected = [*prepared, *pending] if prepared else pending
                if decisions is None:  # (results answer the held calls first)
                    injected = self.tool_declarations.declare(self.context, injected, clock)
                if injected:
                    await self._inject(injected)
                if decisions is None:
                    message = await self._reader.run()
                    if message.stop_reason == "error" or message.stop_reason == "aborted":
                        await self._end(message)
                        return
                    self.new_messages.append(message)
                    tool_results, has_more_tool_calls = await self._run_tools(message)
                    spent: Usage | None = message.usage
                else:
                    message = self._held_reply()
                    tool_results, has_more_tool_calls = await self._run_tools(message, decisions)
                    decisions = None
                    spent = None  # an earlier run's request, counted there
                decision = None
                if self._has_turn_hooks:
                    turn = TurnContext(message, tool_results, self.context, self.new_messages)
                    if config.finish_turn is not None:
                        decision = await self._finish_turn(turn)
                await self.emit(TurnEnd(message, tool_results))
                if self.signal.aborted:
                    await self.emit(AgentEnd(self.new_messages))
                    return
                nudge = None
                if self.output is not None:
                    if self.output.given(tool_results):
                        await self.emit(AgentEnd(self.new_messages))
                        return
                    nudge = self._output_retry(message, tool_results)
                if self.held is not None or (control is not None and control.ends_run(spent)):
                    await self.emit(AgentEnd(self.new_messages))
                    return
                if self._has_turn_hooks:
                    if (decision is not None and decision.action == "end") or (
                        config.should_stop_after_turn is not None
                        and await call_hook(config.should_stop_after_turn, turn) is True
                    ):
                        await self.emit(AgentEnd(self.new_messages))
                        return
                    explicit_continue = decision is not None
                    if config.prepare_next_turn is not None:
                        last_turn = turn
                if control is not None and control.stopping:
                    break  # asked for during the turn hooks; the queues stay as they are
                pending = await self._poll(config.get_steering_messages)
                if nudge is not None:
                    pending = [nudge, *pending]
                if has_more_tool_calls or pending:
                    explicit_continue = False
            if control is not None and control.stopping:
                break  # the follow-ups stay queued
            pending = await self._poll(config.get_follow_up_messages)
            if not pending and not explicit_continue:
                break
            explicit_continue = False  # a follow-up or the decision: one more request either way
        await self.emit(AgentEnd(self.new_messages))

    def _output_retry(
        self, message: AssistantMessage, tool_results: list[ToolResultMessage]
    ) -> UserMessage | None:
        """After a turn without the typed answer: the message asking for it, if the reply did
        not try; the last retry's request forces the output tool (``OutputError``: spent)."""
        assert self.output is not None
        nudge = self.output.retry(message, tool_results, self.new_messages)
        self.options = self.output.options_for(self.options)
        return nudge

    async def _finish_turn(self, turn: TurnContext) -> TurnDecision | None:
        hook = self.config.finish_turn
        assert hook is not None
        return result_of(await call_hook(hook, turn, self.signal), TurnDecision)

    async def _prepare_next_turn(self, turn: TurnContext) -> Sequence[AgentMessage]:
        """Ask ``prepare_next_turn`` about the turn that follows; return the messages it adds."""
        hook = self.config.prepare_next_turn
        assert hook is not None
        next_turn = result_of(await call_hook(hook, turn), NextTurn)
        if next_turn is None:
            return ()
        self._apply(next_turn.context, next_turn.model, next_turn.thinking_level)
        return next_turn.messages or ()

    async def prepare_request(self) -> None:
        """Let ``prepare_request`` change the context, model or thinking level of the request
        about to be made (and of the later ones)."""
        hook = self.config.prepare_request
        assert hook is not None
        level = self.options.reasoning or "off"
        request = RequestContext(self.context, self.model, level)
        update = result_of(await call_hook(hook, request, self.signal), RequestUpdate)
        if update is not None:
            self._apply(update.context, update.model, update.thinking_level)

    async def _end(self, message: AssistantMessage) -> None:
        """End the run after a reply that failed or was aborted: no tools, no further turn.

        ``finish_turn`` still sees the turn; what it decides changes nothing."""
        self.new_messages.append(message)
        if self.config.finish_turn is not None:
            await self._finish_turn(TurnContext(message, [], self.context, self.new_messages))
        await self.emit(TurnEnd(message, []))
        await self.emit(AgentEnd(self.new_messages))

    async def _inject(self, pending: Sequence[AgentMessage]) -> None:
        for message in pending:
            await self.emit(MessageStart(message))
            await self.emit(MessageEnd(message))
            self.context.messages.append(message)
            self.new_messages.append(message)

    async def _poll(self, getter: Callable[[], Any] | None) -> Sequence[AgentMessage]:
        """Ask a queue getter for messages, unless there is none or the run was aborted."""
        if getter is None or self.signal.aborted:
            return ()
        messages = await call_hook(getter)
        if type(messages) is list or (
            isinstance(messages, Sequence) and not isinstance(messages, (str, bytes))
        ):
            return messages
        return ()  # None, or a stray value of a sync getter

    def _held_reply(self) -> AssistantMessage:
        """The reply whose held calls the run resolves (the context's last assistant message)."""
        for message in reversed(self.context.messages):
            if isinstance(message, AssistantMessage):
                return message
        raise AssertionError("decisions were checked against a reply that holds calls")

    async def _run_tools(
        self, message: AssistantMessage, decisions: Mapping[str, Decision] | None = None
    ) -> tuple[list[ToolResultMessage], bool]:
        calls = [block for block in message.content if isinstance(block, ToolCall)]
        if decisions is not None:
            calls = [call for call in calls if call.id in decisions]
        if not calls:
            return [], False
        batch = self._batch
        if batch is None:
            batch = self._batch = ToolBatch(
                config=self.config,
                emit=self.emit,
                signal=self.signal,
                abortable=self.abortable,
                task_group=self.task_group,
                trace=self.trace,
            )
        batch.for_reply(message, self.context, decisions)
        if message.stop_reason == "length":
            # The reply was cut at the output limit: its calls' arguments may be cut too.
            results, terminate = await batch.refuse_truncated(calls), False
        else:
            results, terminate = await batch.run(calls)
            if batch.held:
                self.held = batch.held
        self.context.messages.extend(results)
        self.new_messages.extend(results)
        return results, not terminate

    def _apply(
        self,
        context: AgentContext | None,
        model: Model | None,
        thinking_level: ThinkingLevel | None,
    ) -> None:
        """Take what a hook changed for the next request: each value that is not ``None``."""
        if context is not None:
            self.context = context
            if self.output is not None:  # the output tool stays offered
                self.context = self.output.with_tool(self.context)
        if model is not None:
            self.model = model
        if thinking_level is not None:
            level = None if thinking_level == "off" else thinking_level
            self.options = attrs.evolve(self.options, reasoning=level)

    async def options_with_api_key(self, get_api_key: Callable[[str], Any]) -> StreamOptions:
        """The options of the next model call, with the key resolved for the model's provider."""
        key = result_of(await call_hook(get_api_key, self.model.provider), str)
        if not key or key == self.options.api_key:
            return self.options
        return attrs.evolve(self.options, api_key=key)


class ReplyReader:
    """Reads one reply of a stream function as a run does, into ``message_start`` /
    ``message_update`` events and a final message.

    For a model call made outside a run (an execution engine's model step), so that it judges a
    stream exactly as the loop does: a stream function that raises, ends without a terminal
    event, breaks the event grammar or is cancelled by somebody else fails the reply (an
    ``AssistantMessage`` with ``stop_reason="error"``) instead of raising. An exception of one of
    ``interruptions`` passes unchanged, as does a real cancellation; after a cancellation,
    :meth:`aborted_message` is the reply as far as it came.

    Args:
        model: the model the call is made to (named by a failed reply).
        emit: receives ``message_start`` and every ``message_update``; sync or async, awaited.
        clock: milliseconds since the epoch, the timestamp of a failed reply that streamed
            nothing.
        interruptions: exception types that pass instead of failing the reply.
        log_failures: log a failed reply on the ``pi_core`` logger, as a run does.
    """

    __slots__ = (
        "_began",
        "_cancel_deferred",
        "_emitting",
        "_partial",
        "_started",
        "clock",
        "emit",
        "interruptions",
        "log_failures",
        "model",
    )

    model: Model
    emit: AwaitingEmit
    """``emit`` as the reader awaits it."""
    clock: Callable[[], int]
    interruptions: tuple[type[BaseException], ...]
    log_failures: bool

    def __init__(
        self,
        model: Model,
        emit: Emit,
        *,
        clock: Callable[[], int] = now_ms,
        interruptions: tuple[type[BaseException], ...] = (),
        log_failures: bool = True,
    ) -> None:
        self._setup(model, awaiting(emit), clock, interruptions, log_failures)

    def _setup(
        self,
        model: Model,
        emit: AwaitingEmit,
        clock: Callable[[], int],
        interruptions: tuple[type[BaseException], ...],
        log_failures: bool,
    ) -> None:
        self.model = model
        self.emit = emit
        self.clock = clock
        self.interruptions = interruptions
        self.log_failures = log_failures
        self._emitting = False
        self._cancel_deferred = False
        self._partial: AssistantMessage | None = None
        self._started = False
        self._began: int | None = None
        """When the model call began (``perf_counter_ns``); ``None`` before any call."""

    async def read(
        self, stream_fn: StreamFn, context: Context, options: StreamOptions
    ) -> AssistantMessage:
        """Call ``stream_fn`` and read its reply; whatever goes wrong with it fails the reply.

        The final message gets the call's ``duration_ms`` unless it carries one already (a
        reply recorded earlier and replayed keeps its own)."""
        self._began = perf_counter_ns()
        try:
            iterator = await open_stream(stream_fn, self.model, context, options)
        except Exception as exc:
            if isinstance(exc, self.interruptions):
                raise
            return self._timed(self._failed_message(exc))
        except BaseException as exc:
            return self._timed(self._stray_cancellation_message(exc))
        try:
            return self._timed(await self._consume(iterator))
        finally:
            await close_stream(iterator)

    def _timed(self, final: AssistantMessage) -> AssistantMessage:
        """``final`` with the milliseconds since the call began, when it has none."""
        if final.duration_ms is None and self._began is not None:
            final.duration_ms = round((perf_counter_ns() - self._began) / 1_000_000)
        return final

    def aborted_message(self) -> AssistantMessage:
        """The reply as far as it came, ended by an abort (a cancellation cut the read)."""
        return self._timed(self._final_from_partial("aborted", REQUEST_ABORTED))

    def _cut(self) -> None:
        """Deliver an abort deferred while an event was emitted: only a run's reader defers one."""

    async def _consume(self, iterator: AsyncIterator[AssistantMessageEvent]) -> AssistantMessage:
        emit = self.emit
        next_event = iterator.__anext__
        while True:
            try:
                event = await next_event()
            except StopAsyncIteration:
                return self._failed_message(RuntimeError(NO_TERMINAL_EVENT))
            except Exception as exc:
                if isinstance(exc, self.interruptions):
                    raise
                return self._failed_message(exc)
            except BaseException as exc:
                return self._stray_cancellation_message(exc)
            try:
                if event.type == "done" or event.type == "error":
                    return self._terminal_message(event)
                partial = event.partial
                if event.type == "start":
                    if self._started:
                        return self._malformed("a second start event")
                    self._started = True
                    agent_event: AgentEvent = MessageStart(partial.shallow_copy())
                elif self._started:
                    agent_event = MessageUpdate(partial.shallow_copy(), event)
                else:  # content events before ``start`` are ignored, as upstream
                    continue
            except AttributeError:  # not an event, or a partial that is not a message
                return self._malformed(
                    f"{type(event).__name__} is not an event with a partial message"
                )
            self._partial = partial
            # The hottest path of a run: the emit is inlined, and so is the abort deferral.
            self._emitting = True
            try:
                await emit(agent_event)
            finally:
                self._emitting = False
            if self._cancel_deferred:
                self._cut()
                # Deliver the cancellation here: a stream that hands over its next events
                # without a checkpoint (a burst of buffered events) would otherwise run on.
                await anyio.lowlevel.checkpoint()

    def _terminal_message(self, event: Any) -> AssistantMessage:
        """The final message a ``done`` / ``error`` event carries, if it carries one.

        An ``error`` event with a plain string for its error (a hand-written stream function's
        slip) fails the reply with that text.
        """
        final = event.message if event.type == "done" else event.error
        if isinstance(final, AssistantMessage):
            if final.stop_reason == "error" and self.log_failures:
                log_model_failure(self.model, final, None)
            return final
        if event.type == "error" and isinstance(final, str) and final:
            return self._final_from_partial("error", final)
        return self._malformed(f"the {event.type} event carries no final message")

    def _malformed(self, what: str) -> AssistantMessage:
        """The failed reply of a stream that broke the event grammar."""
        return self._final_from_partial("error", f"{_MALFORMED_TEXT}: {what}")

    def _stray_cancellation_message(self, exc: BaseException) -> AssistantMessage:
        """The failed reply for a cancellation nothing sent the run; re-raise anything else.

        A stream function that awaits a task somebody else cancelled (asyncio) gets that task's
        ``CancelledError``: a failure of the stream, not the run's cancellation.
        """
        if not is_stray_cancellation(exc, native_cancel_possible=True):
            raise exc
        return self._failed_message(exc)

    def _failed_message(self, exc: BaseException) -> AssistantMessage:
        return self._final_from_partial("error", exception_text(exc), exc)

    def _final_from_partial(
        self, stop_reason: StopReason, error_message: str, exc: BaseException | None = None
    ) -> AssistantMessage:
        """The reply as far as it came, ended with ``stop_reason``; an error is logged (with
        ``exc``'s traceback when an exception caused it)."""
        partial = self._partial
        if partial is None:
            final = failed_reply(self.model, stop_reason, error_message, timestamp=self.clock())
        else:
            final = partial.shallow_copy()
            final.content = list(partial.content)
            final.stop_reason = stop_reason
            final.error_message = error_message
        if stop_reason == "error" and self.log_failures:
            log_model_failure(self.model, final, exc)
        return final


class _TurnReader(ReplyReader):
    """Streams each assistant reply of a run into ``message_start`` / ``message_update`` /
    ``message_end``.

    An abort cancels the model call at once, except while an event is being emitted: listeners
    are never cancelled by an abort, so the cancellation waits for the emit to return. The call
    is cancelled through the run's task group, which has no other task while the model streams:
    a cancel scope per call would cost more than the rest of the call's overhead together. The
    group then ends and the run closes out after it (:attr:`cut`, :meth:`finish`).
    """

    __slots__ = ("_run", "cut")

    def __init__(self, run: _Run) -> None:
        config = run.config
        self._setup(run.model, run.emit, config.clock, config.interruptions, True)
        self._run = run
        self.cut = False
        """Whether an abort cancelled the run's task group to cut the model call."""

    async def run(self) -> AssistantMessage:
        """Stream the reply and return the final message, already emitted and in the context."""
        run = self._run
        self.model = run.model  # prepare_next_turn may have changed it
        self.emit = run.emit  # a traced run wraps its emit after the run is made
        self._partial = None
        self._started = False
        self._began = None
        if run.signal.aborted:
            final = self.aborted_message()
        elif run.watch is not None:
            final = await self._stream_watched(run.watch)
        elif run.abortable:
            final = await self._stream_abortable()
        else:
            final = await self._stream()
        return await self.finish(final)

    async def _stream_watched(self, watch: WatchedTaskGroup) -> AssistantMessage:
        """Stream with the debug checks of the run's task group around the model call."""
        watch.model_call_starts()
        try:
            return await (self._stream_abortable() if self._run.abortable else self._stream())
        finally:
            watch.model_call_ended()

    async def finish(self, final: AssistantMessage) -> AssistantMessage:
        """Emit the end of the reply (and its start, if the stream never sent one), stamped
        with the thinking level the run asked for."""
        run = self._run
        final.thinking_level = run.options.reasoning or "off"
        if not self._started:
            await run.emit(MessageStart(final.shallow_copy()))
        run.context.messages.append(final)
        await run.emit(MessageEnd(final))
        return final

    async def _stream_abortable(self) -> AssistantMessage:
        self._cancel_deferred = False
        unregister = self._run.signal.on_abort(self._on_abort)
        try:
            final = await self._stream()
            if self.cut:  # the stream ran to its end without a checkpoint after the abort
                await anyio.lowlevel.checkpoint()
            return final
        finally:
            unregister()

    def _on_abort(self) -> None:
        if self._emitting:
            self._cancel_deferred = True
        else:
            self._cut()

    def _cut(self) -> None:
        self.cut = True
        task_group = self._run.task_group
        assert task_group is not None
        task_group.cancel_scope.cancel()

    async def _stream(self) -> AssistantMessage:
        run = self._run
        if run.config.prepare_request is not None:
            await run.prepare_request()
            self.model = run.model
        messages: list[AgentMessage] = run.context.messages
        if run.config.transform_context is not None:
            messages = await call_hook(run.config.transform_context, messages, run.signal)
        llm_messages = run.config.convert_to_llm(messages)
        if needs_await(llm_messages):
            llm_messages = await llm_messages
        # The transcript's system messages carry the prompt and the tools.
        context = Context(None, llm_messages)
        get_api_key = run.config.get_api_key
        options = (
            run.options if get_api_key is None else await run.options_with_api_key(get_api_key)
        )
        return await self.read(run.config.stream_fn, context, options)
