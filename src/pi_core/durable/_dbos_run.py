"""A durable run on DBOS: one workflow around the ordinary loop, one step per model or tool call.

asyncio only: DBOS runs its workflows on asyncio.

What is recorded, in the order the run's own task takes the ids (so replay finds them again):
the abort watcher's ``recv`` (first of all), each flush of lifecycle events (a stream write),
each model call (a step: the final message), each tool call (a step reserved in source order
before the batch starts: the result, the error text or the abort), each steering / follow-up poll
(a ``recv`` with no wait). ``message_update`` and ``tool_execution_update`` are written from
inside their step, unrecorded: after a crash the step runs again and writes them again.

A run with a deadline records when it ends (a step, before the loop starts), so a recovered run
keeps the deadline of its first start. Calls held for approval are waited for after the loop
returns (the waiting calls published, each decision received), then resolved, and the loop goes
on: one run, with no ``agent_end`` in between.

Aborts are deterministic: an abort request only cuts the steps that are running (they record that
they were aborted); the loop's own signal is aborted when a recorded outcome says so, never by
the request itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import nullcontext
from time import perf_counter_ns
from typing import Any, TypeVar

import anyio
import attrs
from dbos import DBOS
from dbos._dbos import StepReservation

from .. import (
    AgentContext,
    AgentEnd,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    Approve,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Decision,
    Deny,
    Model,
    PendingToolCall,
    RunLimits,
    StreamOptions,
    StreamStart,
    ToolCall,
    ToolExecutionUpdate,
    TurnContext,
    pending_tool_calls,
    resolve_tool_calls,
    run_agent_loop,
    run_agent_loop_continue,
)
from ..lowlevel import (
    RecordedCall,
    RecordedFailure,
    ReplyReader,
    ToolCallAborted,
    call_hook,
    exception_text,
    limits_left,
    terminal_event,
    tool_call_denied_text,
    tool_timed_out_text,
)
from ..nursery import AbortController, unwrap_single_exception
from ._dbos_approvals import INTERRUPTED, DoubtGate, await_decisions, deadline_ms
from ._dbos_compaction import DurableCompactor
from ._dbos_logs import durable_logger
from ._dbos_names import ABORT, EVENTS, FOLLOW_UP, STEER, STOP, WORKFLOW
from ._dbos_recorded import INTERRUPTIONS, NotRecordedError, recorded
from ._dbos_updates import UpdateWriter, open_update_writer
from ._record import (
    MAX_RESULT_BYTES,
    EventLog,
    RecordedClock,
    decode_message,
    encode_message,
    step_end,
    unrecordable,
)
from ._spec import AgentSpec, DurableAgents, DurableError, loop_config

__all__ = ["DurableRun", "NotRecordedError", "run_workflow", "serve", "served"]

T = TypeVar("T")

_WATCH_SECONDS = 10 * 365 * 24 * 3600.0
"""How long a run listens for an abort request: longer than any run."""


@attrs.frozen
class Serving:
    """What this process's workflows build runs from, and the limits of what they record."""

    agents: DurableAgents
    max_result_bytes: int = MAX_RESULT_BYTES


_served: list[Serving] = []


def serve(serving: Serving | None) -> None:
    """Make ``serving`` what this process's workflows run (``None``: nothing)."""
    _served[:] = [] if serving is None else [serving]


def served() -> Serving:
    if not _served:
        raise DurableError("this process serves no agents: runs execute inside open_worker()")
    return _served[0]


@DBOS.workflow(name=WORKFLOW)
async def run_workflow(
    agent: str,
    params: dict[str, Any],
    prompts: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    created_at: int,
) -> list[dict[str, Any]]:
    """The workflow of one run; returns its new messages as JSON-ready dicts."""
    serving = served()
    spec = serving.agents.build(agent, params)
    run = DurableRun(spec, created_at, serving.max_result_bytes)
    new = await run.run(
        [decode_message(prompt) for prompt in prompts],
        [decode_message(message) for message in messages],
    )
    return [encode_message(message) for message in new]


class DurableRun:
    """The loop of one run, with its model and tool calls as steps."""

    def __init__(
        self, spec: AgentSpec, created_at: int, max_result_bytes: int = MAX_RESULT_BYTES
    ) -> None:
        self.spec = spec
        self.max_result_bytes = max_result_bytes
        self.clock = RecordedClock(created_at)
        self.log = EventLog()
        self.controller = AbortController()  # the loop's: aborted by recorded outcomes only
        self.live = AbortController()  # cuts the running steps when an abort is requested
        self.reservations: dict[str, _Reserved] = {}
        self.never_replayed = _never_replayed(spec.tools)
        self.recorded_tools = frozenset(tool.name for tool in spec.tools)
        """The tools whose calls are steps; the output tool, pure validation, is not one."""
        self.batch_aborted = False
        self.stop_requested = False  # live: the watcher received a stop
        self.stop_recorded = False  # a step's recorded outcome saw it: the run stops
        self.compactor = (
            None
            if spec.compaction is None
            else DurableCompactor(spec.compaction, loop_config(spec), self.clock, self.live.signal)
        )
        self.deadline_ms: int | None = None  # recorded: when the spec's deadline aborts the run
        self.resuming = False  # the loop ended holding calls: it goes on once they are decided
        self.limit_reached = False  # the replies before a resolution reached one of the limits

    async def run(
        self, prompts: list[AgentMessage], messages: list[AgentMessage]
    ) -> list[AgentMessage]:
        with unwrap_single_exception():
            async with anyio.create_task_group() as task_group:
                for watch in (self._watch_for_abort, self._watch_for_stop):
                    watching = anyio.Event()
                    task_group.start_soon(watch, watching)
                    await watching.wait()
                await self._start_deadline(task_group)
                new = await self._run_loop(prompts, messages)
                task_group.cancel_scope.cancel()
        await DBOS.close_stream_async(EVENTS)
        return new

    async def _run_loop(
        self, prompts: list[AgentMessage], messages: list[AgentMessage]
    ) -> list[AgentMessage]:
        context = AgentContext(
            self.spec.system_prompt, messages, [self._tool(t) for t in self.spec.tools]
        )
        config = self._config()
        if self.compactor is not None:
            signal = self.controller.signal
            resolve = self._resolve_held
            return await self.compactor.run(prompts, context, config, self._emit, signal, resolve)
        if prompts:
            new = await run_agent_loop(
                prompts, context, config, self._emit, signal=self.controller.signal
            )
        else:
            new = await run_agent_loop_continue(
                context, config, self._emit, signal=self.controller.signal
            )
        return await self._resolve_held(context, config, new, self._emit)

    def _config(self) -> AgentLoopConfig:
        spec = self.spec
        return loop_config(
            spec,
            stream_fn=self._stream,
            get_steering_messages=lambda: self._poll(STEER, spec.steering_mode),
            get_follow_up_messages=lambda: self._poll(FOLLOW_UP, spec.follow_up_mode),
            clock=self.clock,
            before_tool_batch=self._before_tool_batch,
            should_stop_after_turn=self._should_stop_after_turn,
            interruptions=INTERRUPTIONS,
            limits=_without_deadline(spec.limits),  # the run keeps a recorded one instead
        )

    # --- abort, events, polls ---------------------------------------------------------------

    async def _watch_for_abort(self, watching: anyio.Event) -> None:
        # Setting the event does not switch tasks: the recv below takes its ids before the run's
        # task goes on, so they come first on every replay too.
        watching.set()
        request = await DBOS.recv_async(ABORT, timeout_seconds=_WATCH_SECONDS)
        if request is not None:
            self.live.abort()

    async def _watch_for_stop(self, watching: anyio.Event) -> None:
        # As the abort watcher: its recv takes its ids before the run's task goes on.
        watching.set()
        request = await DBOS.recv_async(STOP, timeout_seconds=_WATCH_SECONDS)
        if request is None:
            return
        self.stop_requested = True
        if request.get("grace") is not None:
            await anyio.sleep(request["grace"])
            self.live.abort()  # the stop becomes an abort: the running steps record theirs

    def _noting_stops(self, step: Callable[..., Awaitable[tuple[Any, ...]]]) -> Any:
        """``step``, its outcome followed by whether a stop had been asked for when it ended.

        A stop takes effect where the recorded outcomes say it was seen, never where the
        request happens to arrive on a replay (the watcher's receive returns at once then).
        """

        async def noted(*args: Any) -> tuple[Any, ...]:
            return (*await step(*args), self.stop_requested)

        return noted

    async def _stop_seen(self) -> bool:
        """Whether a stop has been asked for by now, recorded (a step of its own, for an
        outcome that no step of the call recorded: a decision)."""

        async def seen() -> bool:
            return self.stop_requested

        return await recorded(DBOS.run_step_async({"name": "stop seen"}, seen), "a stop")

    async def _should_stop_after_turn(self, turn: TurnContext) -> bool:
        """The spec's own hook, or a stop that the turn's recorded outcomes saw, or a limit
        that the replies before a resolution reached."""
        if self.stop_recorded or self.limit_reached:
            return True
        hook = self.spec.should_stop_after_turn
        return hook is not None and await call_hook(hook, turn) is True

    async def _emit(self, event: AgentEvent) -> None:
        kind = event.type
        if isinstance(event, AgentEnd) and pending_tool_calls(event.messages):
            self.resuming = True  # not the end: the run waits for decisions, then goes on
            await self._flush()  # what the run did so far is readable while it waits
            return
        if kind == "agent_start" and self.resuming:
            self.resuming = False  # the same run going on
            return
        self.log.add(event, self.clock())
        if kind == "agent_end":
            await self._flush()
        elif kind == "turn_end" and self.batch_aborted:
            self.controller.abort()  # read by the loop right after this event: it ends the run

    async def _flush(self) -> None:
        if self.log:
            await recorded(DBOS.write_stream_async(EVENTS, self.log.take()), "the run's events")

    async def _poll(self, topic: str, mode: str) -> list[AgentMessage]:
        messages: list[AgentMessage] = []
        while True:
            value = await DBOS.recv_async(topic, timeout_seconds=0)
            if value is None:
                return messages
            messages.append(decode_message(value))
            if mode == "one-at-a-time":
                return messages

    # --- held calls, the deadline ------------------------------------------------------------

    async def _resolve_held(
        self,
        context: AgentContext,
        config: AgentLoopConfig,
        new: list[AgentMessage],
        emit: Callable[[AgentEvent], Awaitable[None]],
        conversation: Callable[[], list[AgentMessage]] | None = None,
    ) -> list[AgentMessage]:
        """The run's new messages, once every call the loop held has been decided and the loop
        has gone on from the decisions (as often as it holds calls again).

        ``conversation`` gives the messages as they stand when the loop goes on (by default the
        context's, then the new ones; a compacting run keeps its own).
        """
        while held := pending_tool_calls(new, context.tools):
            decisions = await self._decide(held)
            messages = conversation() if conversation else [*context.messages, *new]
            resumed = AgentContext(context.system_prompt, messages, context.tools)
            going_on = self._going_on(config, new)
            signal = self.controller.signal
            new = [
                *new,
                *await resolve_tool_calls(decisions, resumed, going_on, emit, signal=signal),
            ]
        return new

    def _going_on(self, config: AgentLoopConfig, new: list[AgentMessage]) -> AgentLoopConfig:
        """The config of the loop that goes on after decisions: with what the run's replies so
        far left of its limits. A limit they reached ends the run after the resolving turn."""
        if config.limits is None:
            return config
        replies = [m.usage for m in new if isinstance(m, AssistantMessage)]
        left = limits_left(config.limits, replies)
        if isinstance(left, RunLimits):
            return attrs.evolve(config, limits=left)
        self.limit_reached = True
        return attrs.evolve(config, limits=None)

    async def _decide(self, held: list[PendingToolCall]) -> dict[str, Decision]:
        """Wait for a decision on each held call; in an aborted run, answer them at once.

        Approving every call of an aborted run answers each ``Operation aborted``, as an abort
        answers the calls it finds running.
        """
        if not self.controller.signal.aborted:
            waited = await await_decisions(held, self.spec.approval_timeout, self.deadline_ms)
            self.clock.advance(waited.at_ms)
            self.stop_recorded = self.stop_recorded or await self._stop_seen()
            if not waited.aborted:
                return waited.decisions
            self.controller.abort()
        return {call.tool_call_id: Approve() for call in held}

    async def _start_deadline(self, task_group: Any) -> None:
        """Record when the spec's deadline ends the run, and abort the running steps then.

        The end is a step's output: a recovered run keeps the deadline of its first start. The
        abort goes where a requested one goes (the running steps record that they were cut),
        so the run ends as recorded on every replay.
        """
        limits = self.spec.limits
        if limits is None or limits.deadline is None:
            return
        self.deadline_ms = await recorded(
            DBOS.run_step_async({"name": "run deadline"}, deadline_ms, limits.deadline),
            "the run's deadline",
        )
        left = (self.deadline_ms - step_end()) / 1000
        if left <= 0:
            self.live.abort()  # before the loop starts: its first step records the abort
        else:
            task_group.start_soon(self._abort_after, left)

    async def _abort_after(self, seconds: float) -> None:
        await anyio.sleep(seconds)
        self.live.abort()

    # --- model calls --------------------------------------------------------------------------

    async def _stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield StreamStart(
            AssistantMessage([], model.api, model.provider, model.id, timestamp=self.clock())
        )
        await self._flush()  # the placeholder's message_start goes out before the updates
        with anyio.CancelScope(shield=True):
            model_step = self._noting_stops(self._model_step)
            final, ended, stopping = await recorded(
                DBOS.run_step_async({"name": "model"}, model_step, model, context, options),
                "the model call",
            )
        self.clock.advance(ended)
        self.stop_recorded = self.stop_recorded or stopping
        yield terminal_event(final)

    async def _model_step(
        self, model: Model, context: Context, options: StreamOptions
    ) -> tuple[AssistantMessage, int]:
        final: AssistantMessage | None = None
        async with open_update_writer() as updates:
            # The loop's own reader: a broken or failing stream fails the reply as in-process.
            reader = ReplyReader(
                model,
                _ReplyUpdates(updates),
                clock=step_end,
                interruptions=INTERRUPTIONS,
                log_failures=False,  # the run that receives the reply logs a failed one
            )
            with self.live.signal.scope():
                options = attrs.evolve(options, signal=self.live.signal)
                final = await reader.read(self.spec.stream_fn, context, options)
        if final is None:  # the abort cut the call
            final = reader.aborted_message()
        return final, step_end()

    # --- tool calls ---------------------------------------------------------------------------

    async def _before_tool_batch(self, calls: Sequence[ToolCall]) -> None:
        await self._flush()  # tool_execution_start goes out before the calls' updates
        calls = [call for call in calls if call.name in self.recorded_tools]
        gate = DoubtGate([call.id for call in calls])
        for call in calls:
            # A never-replay call records that it started before it runs: a recovered run that
            # finds the start and no outcome knows the call is in doubt.
            start = DBOS.reserve_step() if call.name in self.never_replayed else None
            self.reservations[call.id] = _Reserved(call, DBOS.reserve_step(), start, gate)

    def _tool(self, tool: AgentTool) -> AgentTool:
        async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> Any:
            reserved = self.reservations.pop(tool_call_id)
            try:
                with anyio.CancelScope(shield=True):
                    kind, value, ended, stopping = await self._call_outcome(tool, reserved, params)
            finally:
                reserved.gate.finish(tool_call_id)
            self.clock.advance(ended)
            self.stop_recorded = self.stop_recorded or stopping
            if kind == "aborted":
                self.batch_aborted = True
                raise ToolCallAborted  # as an abort in-process: after_tool_call skips the call
            if kind == "error":
                if isinstance(value, RecordedCall):  # the tool raised, after running this long
                    raise RecordedFailure(str(value.value), value.duration_ms)
                raise RecordedFailure(value, None)
            return value

        # The step applies the timeout: the loop's own would cut the recording short.
        return attrs.evolve(tool, execute=execute, timeout=None)

    async def _call_outcome(
        self, tool: AgentTool, reserved: _Reserved, params: Any
    ) -> tuple[str, Any, int, bool]:
        """The recorded outcome of one call, and whether it saw a stop: its step's, or for a
        never-replay call that is in doubt, what reconciling it or a decision made of it."""
        call = reserved.call
        if reserved.start is None:
            step = self._noting_stops(self._tool_step)
            return await recorded(
                reserved.step.run_async({"name": f"tool {tool.name}"}, step, tool, call, params),
                f"the outcome of tool {tool.name} (call {call.id})",
            )
        outcome = await self._attempt(tool, call, params, reserved.start, reserved.step)
        if outcome[0] != "in_doubt":
            return outcome
        # No flush of the run's events here: what the other calls have logged by now depends
        # on timing, so a write here would take an id on one execution and not on the next.
        # The calls' starts are readable already; the rest goes out before the next request.
        await reserved.gate.wait_turn(call.id)
        while outcome[0] == "in_doubt":
            pending = PendingToolCall(call.id, call.name, params, INTERRUPTED)
            waited = await await_decisions([pending], self.spec.approval_timeout, self.deadline_ms)
            self.clock.advance(waited.at_ms)
            decision = waited.decisions.get(call.id)
            if waited.aborted or decision is None:
                return "aborted", None, self.clock(), await self._stop_seen()
            if isinstance(decision, Deny):
                text = tool_call_denied_text(decision.reason)
                return "error", text, self.clock(), await self._stop_seen()
            # Approved: a new attempt, on steps taken now (the gate keeps their order).
            outcome = await self._attempt(tool, call, params, None, None)
        return outcome

    async def _attempt(
        self,
        tool: AgentTool,
        call: ToolCall,
        params: Any,
        start: StepReservation | None,
        step: StepReservation | None,
    ) -> tuple[str, Any, int, bool]:
        """Record the call's start, then run it; or, when the start was recorded by an earlier
        execution and its outcome was not, reconcile it (``"in_doubt"``: no answer)."""
        started_here = False

        async def note_start() -> bool:
            nonlocal started_here
            started_here = True
            return True

        name = f"tool {tool.name}"
        what = f"the outcome of tool {tool.name} (call {call.id})"
        await recorded(_run_step(start, {"name": f"{name} started"}, note_start), what)
        run = self._noting_stops(self._tool_step if started_here else self._reconcile_step)
        return await recorded(_run_step(step, {"name": name}, run, tool, call, params), what)

    async def _reconcile_step(
        self, tool: AgentTool, call: ToolCall, params: Any
    ) -> tuple[str, Any, int]:
        """The outcome of a call whose worker died while it ran: what ``reconcile`` found."""
        if tool.reconcile is None:
            return "in_doubt", None, step_end()
        try:
            found = await tool.reconcile(call.id, params)
        except Exception as exc:
            if isinstance(exc, INTERRUPTIONS):
                raise
            durable_logger.warning(
                "reconcile of tool %s (call %s) raised, the call waits for a decision: %s",
                tool.name,
                call.id,
                exception_text(exc),
            )
            return "in_doubt", None, step_end()
        if found is None:
            return "in_doubt", None, step_end()
        refused = unrecordable(tool.name, found, self.max_result_bytes)
        if refused is not None:
            return "error", refused, step_end()
        return "result", found, step_end()

    async def _tool_step(
        self, tool: AgentTool, call: ToolCall, params: Any
    ) -> tuple[str, Any, int]:
        returned: Any = _NOT_RETURNED
        signal = self.live.signal
        started = perf_counter_ns()
        async with open_update_writer() as updates:
            with signal.scope():
                try:
                    on_update = _Updater(updates, call)
                    timeout = anyio.move_on_after(tool.timeout) if tool.timeout else nullcontext()
                    with timeout:
                        returned = await tool.execute(call.id, params, signal, on_update)
                except Exception as exc:
                    if isinstance(exc, INTERRUPTIONS):
                        raise
                    return "error", _timed(exception_text(exc), started), step_end()
        if returned is not _NOT_RETURNED:
            refused = unrecordable(tool.name, returned, self.max_result_bytes)
            if refused is not None:  # refused here: the engine would fail to store it
                return "error", refused, step_end()
            # Recorded with the time it ran, which a replay reports instead of its own.
            return "result", _timed(returned, started), step_end()
        if signal.aborted:
            return "aborted", None, step_end()
        assert tool.timeout is not None  # neither returned nor aborted: the timeout cut it
        return "error", tool_timed_out_text(tool.name, tool.timeout), step_end()


_NOT_RETURNED: Any = object()


def _timed(value: object, started_ns: int) -> RecordedCall:
    """``value`` recorded with the whole milliseconds since ``started_ns`` (``perf_counter_ns``)."""
    return RecordedCall(value, round((perf_counter_ns() - started_ns) / 1_000_000))


@attrs.frozen
class _Reserved:
    """The steps a call runs as, taken before its batch starts, and its batch's gate."""

    call: ToolCall
    step: StepReservation
    start: StepReservation | None
    """The step recording that a never-replay call started; ``None`` for other calls."""
    gate: DoubtGate


def _never_replayed(tools: Sequence[AgentTool]) -> frozenset[str]:
    """The names whose calls must not run again: the first tool of a name is the one a batch
    runs."""
    first: dict[str, AgentTool] = {}
    for tool in tools:
        first.setdefault(tool.name, tool)
    return frozenset(name for name, tool in first.items() if tool.replay == "never")


def _without_deadline(limits: RunLimits | None) -> RunLimits | None:
    """``limits`` for the loop: a deadline there would be a live timer, which no replay repeats."""
    if limits is None or limits.deadline is None:
        return limits
    rest = attrs.evolve(limits, deadline=None)
    return None if rest == RunLimits() else rest


def _run_step(
    reservation: StepReservation | None, options: Any, func: Any, *args: Any
) -> Awaitable[Any]:
    """Run ``func`` as a step: at its reserved id, or at the next one."""
    if reservation is None:
        return DBOS.run_step_async(options, func, *args)
    return reservation.run_async(options, func, *args)


class _ReplyUpdates:
    """A model step's emit: posts each ``message_update`` to the step's writer.

    The run has emitted the reply's ``message_start`` already, before the step.
    """

    def __init__(self, updates: UpdateWriter) -> None:
        self._updates = updates

    def __call__(self, event: AgentEvent) -> None:
        if event.type == "message_update":
            self._updates.post(event)


class _Updater:
    """A tool's ``on_update`` inside a step: posts each update to the step's writer."""

    def __init__(self, updates: UpdateWriter, call: ToolCall) -> None:
        self._updates = updates
        self._call = call

    def __call__(self, partial: AgentToolResult) -> None:
        call = self._call
        self._updates.post(ToolExecutionUpdate(call.id, call.name, call.arguments, partial))
