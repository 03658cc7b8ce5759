"""The agent loop: turns of one model call and its tool batch, until the model stops asking.

A run is one structured-concurrency tree. It emits every event through one awaited ``emit``; an
abort cancels the running phase (the model stream, the running tools, awaited tool hooks) and the
run then closes out in order, outside the cancelled scope. Which scope the abort cancels in each
phase, and the invariant the model call relies on (the run's task group holds no other task
while the model streams), are set out once, in docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager
from inspect import iscoroutinefunction
from typing import Any, Final, cast

import anyio
import anyio.lowlevel
import attrs
from anyio.abc import TaskGroup

from ._batch import ToolBatch
from ._events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    AssistantMessageEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    TurnEnd,
    TurnStart,
)
from ._hooks import AgentLoopConfig, NextTurn, TurnContext, needs_await
from ._interrupt import is_interruption
from ._log import log_model_failure
from ._messages import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    Context,
    Model,
    StopReason,
    ToolCall,
    ToolResultMessage,
    failed_reply,
)
from ._options import StreamFn, StreamOptions, close_stream, open_stream
from ._run_group import DEBUG, WatchedTaskGroup
from ._texts import NO_TERMINAL_EVENT, REQUEST_ABORTED, exception_text
from ._tracer import RunTrace, RunTracer
from .nursery import AbortSignal, EventStream, open_event_stream, unwrap_single_exception
from .nursery._cancel import is_stray_cancellation

__all__ = [
    "AgentEventStream",
    "Emit",
    "agent_loop",
    "agent_loop_continue",
    "reply_reader",
    "run_agent_loop",
    "run_agent_loop_continue",
]

_MALFORMED_TEXT = "Malformed stream"

Emit = Callable[[AgentEvent], "Awaitable[None] | None"]
"""``emit(event)``: sync or async; awaited before the run goes on."""

AwaitingEmit = Callable[[AgentEvent], Awaitable[None]]
"""An emit as a run calls it: whatever it returns is awaited."""


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
    signal: AbortSignal | None = None,
) -> list[AgentMessage]:
    """Continue from ``context`` as it is (its last message must not be the assistant's).

    Raises:
        ValueError: the context is empty, or ends with an assistant message.
    """
    check_can_continue(context)
    return await run_loop((), context, config, awaiting(emit), signal)


async def run_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: AwaitingEmit,
    signal: AbortSignal | None,
) -> list[AgentMessage]:
    """Run on ``prompts``, or continue from ``context`` when there are none (checked already).

    What ``emit`` returns is awaited as it is: the run adds no coroutine of its own to any event.
    """
    run = _Run(context, config, emit, signal, list(prompts))
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


def awaiting(emit: Emit) -> AwaitingEmit:
    """``emit`` as a run calls it: an async one as it is, a sync one wrapped so that its ``None``
    becomes :data:`READY`."""
    if iscoroutinefunction(emit):
        return emit

    def call(event: AgentEvent) -> Awaitable[None]:
        returned = emit(event)
        return READY if returned is None else returned

    return call


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
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
        return await run_agent_loop(prompts, context, config, emit, signal)

    stream = open_event_stream(produce, buffer_size, stream_type=AgentEventStream)
    return cast("AbstractAsyncContextManager[AgentEventStream]", stream)


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    buffer_size: int = 64,
) -> AbstractAsyncContextManager[AgentEventStream]:
    """The event-stream form of :func:`run_agent_loop_continue`; validates before returning.

    Raises:
        ValueError: the context is empty, or ends with an assistant message.
    """
    check_can_continue(context)

    async def produce(emit: Callable[[AgentEvent], Awaitable[None]]) -> list[AgentMessage]:
        return await run_agent_loop_continue(context, config, emit, signal)

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
        "_has_turn_hooks",
        "_stream",
        "abortable",
        "config",
        "context",
        "emit",
        "model",
        "new_messages",
        "options",
        "signal",
        "task_group",
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
    ) -> None:
        self.context = AgentContext(context.system_prompt, list(context.messages), context.tools)
        self.config = config
        self.model = config.model
        self.new_messages = new_messages
        self.emit = emit
        # Tools always get a signal; without one from the caller nothing can abort, so the
        # run skips its abort plumbing altogether.
        self.abortable = signal is not None
        self.signal = signal if signal is not None else AbortSignal()
        self.options = attrs.evolve(config.options, signal=self.signal)
        self._stream = _AssistantStream(self)
        self._has_turn_hooks = (
            config.prepare_next_turn is not None or config.should_stop_after_turn is not None
        )
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
                await self.run_turns()
        if self._stream.cut:
            # An abort cut the model stream by cancelling the group: close out outside it.
            await self._end(await self._stream.finish(self._stream.aborted_message()))

    # --- turns ----------------------------------------------------------------------------------

    async def run_turns(self) -> None:
        """Upstream's ``runLoop``, plus the abort checks of the close-out."""
        first_turn = True
        pending = await self._poll(self.config.get_steering_messages)
        while True:
            has_more_tool_calls = True
            while has_more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                else:
                    await self.emit(TurnStart())
                if pending:
                    await self._inject(pending)
                message = await self._stream.run()
                if message.stop_reason == "error" or message.stop_reason == "aborted":
                    await self._end(message)
                    return
                self.new_messages.append(message)
                tool_results, has_more_tool_calls = await self._run_tools(message)
                await self.emit(TurnEnd(message, tool_results))
                if self.signal.aborted:
                    await self.emit(AgentEnd(self.new_messages))
                    return
                if self._has_turn_hooks and await self._stop_after_turn(message, tool_results):
                    await self.emit(AgentEnd(self.new_messages))
                    return
                pending = await self._poll(self.config.get_steering_messages)
            pending = await self._poll(self.config.get_follow_up_messages)
            if not pending:
                break
        await self.emit(AgentEnd(self.new_messages))

    async def _end(self, message: AssistantMessage) -> None:
        """End the run after a reply that failed or was aborted: no tools, no further turn."""
        self.new_messages.append(message)
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
        return await _call(getter) or ()

    async def _run_tools(self, message: AssistantMessage) -> tuple[list[ToolResultMessage], bool]:
        calls = [block for block in message.content if isinstance(block, ToolCall)]
        if not calls:
            return [], False
        batch = ToolBatch(
            config=self.config,
            context=self.context,
            message=message,
            emit=self.emit,
            signal=self.signal,
            abortable=self.abortable,
            task_group=self.task_group,
            trace=self.trace,
        )
        results, terminate = await batch.run(calls)
        self.context.messages.extend(results)
        self.new_messages.extend(results)
        return results, not terminate

    async def _stop_after_turn(
        self, message: AssistantMessage, tool_results: list[ToolResultMessage]
    ) -> bool:
        config = self.config
        turn = TurnContext(message, tool_results, self.context, self.new_messages)
        if config.prepare_next_turn is not None:
            next_turn = await _call(config.prepare_next_turn, turn)
            if next_turn is not None:
                self._apply(next_turn)
                turn = TurnContext(message, tool_results, self.context, self.new_messages)
        if config.should_stop_after_turn is None:
            return False
        return bool(await _call(config.should_stop_after_turn, turn))

    def _apply(self, next_turn: NextTurn) -> None:
        if next_turn.context is not None:
            self.context = next_turn.context
        if next_turn.model is not None:
            self.model = next_turn.model
        if next_turn.thinking_level is not None:
            level = None if next_turn.thinking_level == "off" else next_turn.thinking_level
            self.options = attrs.evolve(self.options, reasoning=level)

    async def options_with_api_key(self, get_api_key: Callable[[str], Any]) -> StreamOptions:
        """The options of the next model call, with the key resolved for the model's provider."""
        key = await _call(get_api_key, self.model.provider)
        if not key or key == self.options.api_key:
            return self.options
        return attrs.evolve(self.options, api_key=key)


class _AssistantStream:
    """Streams one assistant reply into ``message_start`` / ``message_update`` / ``message_end``.

    An abort cancels the model call at once, except while an event is being emitted: listeners
    are never cancelled by an abort, so the cancellation waits for the emit to return. The call
    is cancelled through the run's task group, which has no other task while the model streams:
    a cancel scope per call would cost more than the rest of the call's overhead together. The
    group then ends and the run closes out after it (:attr:`cut`, :meth:`finish`).
    """

    __slots__ = (
        "_cancel_deferred",
        "_emitting",
        "_log_failures",
        "_partial",
        "_run",
        "_started",
        "cut",
    )

    def __init__(self, run: _Run, *, log_failures: bool = True) -> None:
        self._run = run
        self._log_failures = log_failures
        self._emitting = False
        self._cancel_deferred = False
        self._partial: AssistantMessage | None = None
        self._started = False
        self.cut = False
        """Whether an abort cancelled the run's task group to cut the model call."""

    async def run(self) -> AssistantMessage:
        """Stream the reply and return the final message, already emitted and in the context."""
        run = self._run
        self._partial = None
        self._started = False
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
        """Emit the end of the reply (and its start, if the stream never sent one)."""
        run = self._run
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
        messages: list[AgentMessage] = run.context.messages
        if run.config.transform_context is not None:
            messages = await _call(run.config.transform_context, messages, run.signal)
        llm_messages = run.config.convert_to_llm(messages)
        if needs_await(llm_messages):
            llm_messages = await llm_messages
        context = Context(run.context.system_prompt, llm_messages, run.context.tools)
        get_api_key = run.config.get_api_key
        options = (
            run.options if get_api_key is None else await run.options_with_api_key(get_api_key)
        )
        return await self.read(run.config.stream_fn, context, options)

    async def read(
        self, stream_fn: StreamFn, context: Context, options: StreamOptions
    ) -> AssistantMessage:
        """Call ``stream_fn`` and read its reply; whatever goes wrong with it fails the reply."""
        try:
            iterator = await open_stream(stream_fn, self._run.model, context, options)
        except Exception as exc:
            if is_interruption(exc):
                raise
            return self._failed_message(exc)
        except BaseException as exc:
            return self._stray_cancellation_message(exc)
        try:
            return await self._consume(iterator)
        finally:
            await close_stream(iterator)

    async def _consume(self, iterator: AsyncIterator[AssistantMessageEvent]) -> AssistantMessage:
        emit = self._run.emit
        next_event = iterator.__anext__
        while True:
            try:
                event = await next_event()
            except StopAsyncIteration:
                return self._failed_message(RuntimeError(NO_TERMINAL_EVENT))
            except Exception as exc:
                if is_interruption(exc):
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
            if final.stop_reason == "error" and self._log_failures:
                log_model_failure(self._run.model, final, None)
            return final
        if event.type == "error" and isinstance(final, str) and final:
            return self._final_from_partial("error", final)
        return self._malformed(f"the {event.type} event carries no final message")

    def _malformed(self, what: str) -> AssistantMessage:
        """The failed reply of a stream that broke the event grammar."""
        return self._final_from_partial("error", f"{_MALFORMED_TEXT}: {what}")

    def aborted_message(self) -> AssistantMessage:
        """The reply as far as it came, ended by the abort."""
        return self._final_from_partial("aborted", REQUEST_ABORTED)

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
            final = failed_reply(
                self._run.model, stop_reason, error_message, timestamp=self._run.config.clock()
            )
        else:
            final = partial.shallow_copy()
            final.content = list(partial.content)
            final.stop_reason = stop_reason
            final.error_message = error_message
        if stop_reason == "error" and self._log_failures:
            log_model_failure(self._run.model, final, exc)
        return final


def reply_reader(model: Model, emit: Emit, clock: Callable[[], int]) -> _AssistantStream:
    """A reader of one reply that reads a stream as a run does, for a model call made outside
    the loop (a durable run's model step), so that both judge a stream the same way.

    ``reader.read(stream_fn, context, options)`` sends ``message_start`` / ``message_update`` to
    ``emit`` and returns the final message (a broken or failing stream fails it, stamped with
    ``clock``); after a cancellation, ``reader.aborted_message()`` is the reply as far as it
    came. It logs nothing: the run that receives the reply logs a failed one.
    """
    config = AgentLoopConfig(model=model, clock=clock)
    run = _Run(AgentContext("", [], []), config, awaiting(emit), None, [])
    return _AssistantStream(run, log_failures=False)


class _Ready:
    """An awaitable that is already done: what a sync emit's ``None`` becomes."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]  # an empty iterator: done at once


READY: Final = _Ready()


async def _call(hook: Callable[..., Any], *args: Any) -> Any:
    """Call a hook that may be sync or async."""
    result = hook(*args)
    if needs_await(result):
        return await result
    return result
