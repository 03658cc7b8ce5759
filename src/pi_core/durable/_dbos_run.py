"""A durable run on DBOS: one workflow around the ordinary loop, one step per model or tool call.

asyncio only: DBOS runs its workflows on asyncio.

What is recorded, in the order the run's own task takes the ids (so replay finds them again):
the abort watcher's ``recv`` (first of all), each flush of lifecycle events (a stream write),
each model call (a step: the final message), each tool call (a step reserved in source order
before the batch starts: the result, the error text or the abort), each steering / follow-up poll
(a ``recv`` with no wait). ``message_update`` and ``tool_execution_update`` are written from
inside their step, unrecorded: after a crash the step runs again and writes them again.

Aborts are deterministic: an abort request only cuts the steps that are running (they record that
they were aborted); the loop's own signal is aborted when a recorded outcome says so, never by
the request itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import nullcontext
from typing import Any

import anyio
import attrs
from dbos import DBOS
from dbos._dbos import StepReservation
from dbos._error import DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError

from .._batch import ToolCallAborted
from .._events import (
    AgentEvent,
    AssistantMessageEvent,
    StreamDone,
    StreamError,
    StreamStart,
    ToolExecutionUpdate,
)
from .._hooks import AgentLoopConfig
from .._interrupt import is_interruption, register_interruption
from .._loop import reply_reader, run_agent_loop, run_agent_loop_continue
from .._messages import AgentContext, AgentMessage, AssistantMessage, Context, Model, ToolCall
from .._options import StreamOptions
from .._texts import (
    exception_text,
    tool_timed_out_text,
)
from .._tools import AgentTool, AgentToolResult
from ..nursery import AbortController, unwrap_single_exception
from ._dbos_names import ABORT, EVENTS, FOLLOW_UP, STEER, WORKFLOW
from ._dbos_updates import UpdateWriter, open_update_writer
from ._record import (
    EventLog,
    RecordedClock,
    decode_message,
    encode_message,
    step_end,
)
from ._spec import AgentSpec, DurableAgents, DurableError

__all__ = ["DurableRun", "run_workflow", "serve", "served_agents"]

_WATCH_SECONDS = 10 * 365 * 24 * 3600.0
"""How long a run listens for an abort request: longer than any run."""

register_interruption(DBOSWorkflowCancelledError)
register_interruption(DBOSWorkflowConflictIDError)

_served: list[DurableAgents] = []


def serve(agents: DurableAgents | None) -> None:
    """Make ``agents`` the definitions this process's workflows build runs from."""
    _served[:] = [] if agents is None else [agents]


def served_agents() -> DurableAgents:
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
    spec = served_agents().build(agent, params)
    run = DurableRun(spec, created_at)
    new = await run.run(
        [decode_message(prompt) for prompt in prompts],
        [decode_message(message) for message in messages],
    )
    return [encode_message(message) for message in new]


class DurableRun:
    """The loop of one run, with its model and tool calls as steps."""

    def __init__(self, spec: AgentSpec, created_at: int) -> None:
        self.spec = spec
        self.clock = RecordedClock(created_at)
        self.log = EventLog()
        self.controller = AbortController()  # the loop's: aborted by recorded outcomes only
        self.live = AbortController()  # cuts the running steps when an abort is requested
        self.reservations: dict[str, tuple[StepReservation, ToolCall]] = {}
        self.batch_aborted = False

    async def run(
        self, prompts: list[AgentMessage], messages: list[AgentMessage]
    ) -> list[AgentMessage]:
        with unwrap_single_exception():
            async with anyio.create_task_group() as task_group:
                watching = anyio.Event()
                task_group.start_soon(self._watch_for_abort, watching)
                await watching.wait()
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
        if prompts:
            return await run_agent_loop(
                prompts, context, config, self._emit, self.controller.signal
            )
        return await run_agent_loop_continue(context, config, self._emit, self.controller.signal)

    def _config(self) -> AgentLoopConfig:
        spec = self.spec
        return AgentLoopConfig(
            model=spec.model,
            stream_fn=self._stream,
            convert_to_llm=spec.convert_to_llm,
            transform_context=spec.transform_context,
            get_api_key=spec.get_api_key,
            get_steering_messages=lambda: self._poll(STEER, spec.steering_mode),
            get_follow_up_messages=lambda: self._poll(FOLLOW_UP, spec.follow_up_mode),
            should_stop_after_turn=spec.should_stop_after_turn,
            prepare_next_turn=spec.prepare_next_turn,
            before_tool_call=spec.before_tool_call,
            after_tool_call=spec.after_tool_call,
            tool_execution=spec.tool_execution,
            max_parallel_tools=spec.max_parallel_tools,
            options=spec.options,
            clock=self.clock,
            before_tool_batch=self._before_tool_batch,
        )

    # --- abort, events, polls ---------------------------------------------------------------

    async def _watch_for_abort(self, watching: anyio.Event) -> None:
        # Setting the event does not switch tasks: the recv below takes its ids before the run's
        # task goes on, so they come first on every replay too.
        watching.set()
        request = await DBOS.recv_async(ABORT, timeout_seconds=_WATCH_SECONDS)
        if request is not None:
            self.live.abort()

    async def _emit(self, event: AgentEvent) -> None:
        self.log.add(event)
        kind = event.type
        if kind == "agent_end":
            await self._flush()
        elif kind == "turn_end" and self.batch_aborted:
            self.controller.abort()  # read by the loop right after this event: it ends the run

    async def _flush(self) -> None:
        if self.log:
            await DBOS.write_stream_async(EVENTS, self.log.take())

    async def _poll(self, topic: str, mode: str) -> list[AgentMessage]:
        messages: list[AgentMessage] = []
        while True:
            value = await DBOS.recv_async(topic, timeout_seconds=0)
            if value is None:
                return messages
            messages.append(decode_message(value))
            if mode == "one-at-a-time":
                return messages

    # --- model calls --------------------------------------------------------------------------

    async def _stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield StreamStart(
            AssistantMessage([], model.api, model.provider, model.id, timestamp=self.clock())
        )
        await self._flush()  # the placeholder's message_start goes out before the updates
        with anyio.CancelScope(shield=True):
            final, ended = await DBOS.run_step_async(
                {"name": "model"}, self._model_step, model, context, options
            )
        self.clock.advance(ended)
        reason = final.stop_reason
        if reason == "error" or reason == "aborted":
            yield StreamError(reason, final)
        else:
            yield StreamDone(reason, final)

    async def _model_step(
        self, model: Model, context: Context, options: StreamOptions
    ) -> tuple[AssistantMessage, int]:
        final: AssistantMessage | None = None
        async with open_update_writer() as updates:
            # The loop's own reader: a broken or failing stream fails the reply as in-process.
            reader = reply_reader(model, _ReplyUpdates(updates), step_end)
            with self.live.signal.scope():
                options = attrs.evolve(options, signal=self.live.signal)
                final = await reader.read(self.spec.stream_fn, context, options)
        if final is None:  # the abort cut the call
            final = reader.aborted_message()
        return final, step_end()

    # --- tool calls ---------------------------------------------------------------------------

    async def _before_tool_batch(self, calls: Sequence[ToolCall]) -> None:
        await self._flush()  # tool_execution_start goes out before the calls' updates
        for call in calls:
            self.reservations[call.id] = DBOS.reserve_step(), call

    def _tool(self, tool: AgentTool) -> AgentTool:
        async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> Any:
            reservation, call = self.reservations.pop(tool_call_id)
            with anyio.CancelScope(shield=True):
                kind, value, ended = await reservation.run_async(
                    {"name": f"tool {tool.name}"}, self._tool_step, tool, call, params
                )
            self.clock.advance(ended)
            if kind == "aborted":
                self.batch_aborted = True
                raise ToolCallAborted  # as an abort in-process: after_tool_call skips the call
            if kind == "error":
                raise _RecordedFailure(value)
            return value

        # The step applies the timeout: the loop's own would cut the recording short.
        return attrs.evolve(tool, execute=execute, timeout=None)

    async def _tool_step(
        self, tool: AgentTool, call: ToolCall, params: Any
    ) -> tuple[str, Any, int]:
        returned: Any = _NOT_RETURNED
        signal = self.live.signal
        async with open_update_writer() as updates:
            with signal.scope():
                try:
                    on_update = _Updater(updates, call)
                    timeout = anyio.move_on_after(tool.timeout) if tool.timeout else nullcontext()
                    with timeout:
                        returned = await tool.execute(call.id, params, signal, on_update)
                except Exception as exc:
                    if is_interruption(exc):
                        raise
                    return "error", exception_text(exc), step_end()
        if returned is not _NOT_RETURNED:
            return "result", returned, step_end()
        if signal.aborted:
            return "aborted", None, step_end()
        assert tool.timeout is not None  # neither returned nor aborted: the timeout cut it
        return "error", tool_timed_out_text(tool.name, tool.timeout), step_end()


_NOT_RETURNED: Any = object()


class _RecordedFailure(Exception):
    """A tool call's recorded error, raised where the batch makes it an error result."""


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
