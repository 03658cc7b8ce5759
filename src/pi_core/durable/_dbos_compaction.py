"""Compaction in a durable run: the summary request is a step, so a recovered run never asks twice.

The run compacts where an Agent with the same policy does: before its first request, between
turns (through its ``prepare_next_turn``), and once after a request the provider refused because
the context was too long. What the step records is the compaction itself (the summary, where the
kept part starts, the time) or why it failed; the compacted transcript is rebuilt from it, the
same on every replay, and the turns after it run on that transcript. A run that compacted
publishes its transcript at the end (what a later run continues from) under :data:`TRANSCRIPT`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import attrs
from dbos import DBOS

from .. import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AssistantMessage,
    Compaction,
    CompactionError,
    CompactionPolicy,
    NextTurn,
    TurnContext,
    is_context_overflow,
    run_agent_loop,
    run_agent_loop_continue,
)
from ..lowlevel import (
    OVERFLOW_AFTER_COMPACTION,
    apply_compaction,
    call_hook,
    compaction_due,
    exception_text,
    summarise_for_run,
)
from ..nursery import AbortSignal
from ._dbos_logs import durable_logger
from ._dbos_names import COMPACTION_STEP, TRANSCRIPT
from ._dbos_recorded import recorded
from ._record import RecordedClock, encode_message, step_end

__all__ = ["DurableCompactor"]

RunEmit = Callable[[AgentEvent], Awaitable[None]]
"""The durable run's emit, awaited for each event (not the public, maybe-sync ``Emit``)."""
ResolveHeld = Callable[
    [AgentContext, AgentLoopConfig, list[AgentMessage], RunEmit, Callable[[], list[AgentMessage]]],
    Awaitable[list[AgentMessage]],
]
"""The run's wait for the calls the loop held, and the loop going on from the decisions."""


class DurableCompactor:
    """The compaction of one durable run: its steps, its count and the transcript it tracks."""

    def __init__(
        self,
        policy: CompactionPolicy,
        summary_config: AgentLoopConfig,
        clock: RecordedClock,
        live: AbortSignal,
    ) -> None:
        self.policy = policy
        self.summary_config = summary_config
        """The spec's own settings (its stream function, options, key): what the summary
        request is made with, inside its step."""
        self.clock = clock
        self.live = live
        """Cuts a summary request in flight when an abort is requested (the step records it)."""
        self.count = 0
        self.transcript: list[AgentMessage] = []
        """The run's conversation as it stands: compacted by each compaction, then grown by
        each ``message_end``."""
        self._emit: RunEmit | None = None
        self._signal: AbortSignal | None = None
        self._held_end: AgentEvent | None = None
        self._retrying = False
        """The overflow retry runs: its start is dropped, and its end, overflowed or not, is
        the run's."""

    async def run(
        self,
        prompts: Sequence[AgentMessage],
        context: AgentContext,
        config: AgentLoopConfig,
        emit: RunEmit,
        signal: AbortSignal,
        resolve_held: ResolveHeld,
    ) -> list[AgentMessage]:
        """The run's loop with its compactions; its new messages, as without compaction.

        Calls the loop holds are waited for with ``resolve_held``, on the conversation as it
        stands, and the turns that follow compact as the first ones do.
        """
        self._emit, self._signal = emit, signal
        messages = list(context.messages)
        if compaction_due(self.policy, config.model, [*messages, *prompts]):
            messages = await self._compact(messages) or messages
        self.transcript = list(messages)
        config = attrs.evolve(config, prepare_next_turn=self._next_turn_hook(config))
        context = AgentContext(context.system_prompt, messages, context.tools)
        if prompts:
            new = await run_agent_loop(prompts, context, config, self._watch, signal=signal)
        else:
            new = await run_agent_loop_continue(context, config, self._watch, signal=signal)
        new = await resolve_held(context, config, new, self._watch, self._conversation)
        new = await self._retry_overflow(new, context, config, signal)
        new = await resolve_held(context, config, new, self._watch, self._conversation)
        if self.count:
            transcript = [encode_message(message) for message in self.transcript]
            await recorded(DBOS.set_event_async(TRANSCRIPT, transcript), "the run's transcript")
        return new

    async def _retry_overflow(
        self,
        new: list[AgentMessage],
        context: AgentContext,
        config: AgentLoopConfig,
        signal: AbortSignal,
    ) -> list[AgentMessage]:
        """After a request refused for its length: drop the failed reply, compact, continue
        once. The first ``agent_end`` is held back meanwhile, so the run's events show one run."""
        held, self._held_end = self._held_end, None
        if held is None:
            return new
        failed = new[-1]
        durable_logger.info(
            "The context was too long for %s: compacting and retrying", config.model.id
        )
        transcript = [m for m in self.transcript if m is not failed]
        compacted = await self._compact(transcript, required=True)
        if compacted is None:
            await self._pass(held)
            return new
        self.transcript = list(compacted)
        self._retrying = True
        context = AgentContext(context.system_prompt, compacted, context.tools)
        retried = await run_agent_loop_continue(context, config, self._watch, signal=signal)
        again = retried[-1] if retried else None
        if isinstance(again, AssistantMessage) and is_context_overflow(again):
            durable_logger.warning(OVERFLOW_AFTER_COMPACTION.format(again.error_message))
        return [*(m for m in new if m is not failed), *retried]

    def _conversation(self) -> list[AgentMessage]:
        return list(self.transcript)

    async def _watch(self, event: AgentEvent) -> None:
        """The run's emit, keeping the transcript and holding back an overflowed run's end."""
        if event.type == "message_end":
            self.transcript.append(event.message)
        elif event.type == "agent_start" and self._retrying:
            return
        elif event.type == "agent_end" and not self._retrying and self._overflowed(event):
            self._held_end = event
            return
        await self._pass(event)

    def _overflowed(self, event: AgentEvent) -> bool:
        """Whether the run ends on a request the provider refused for its length, unaborted:
        the run that the overflow retry continues."""
        if self._signal is not None and self._signal.aborted:
            return False
        messages = getattr(event, "messages", ())
        last = messages[-1] if messages else None
        return isinstance(last, AssistantMessage) and is_context_overflow(last)

    async def _pass(self, event: AgentEvent) -> None:
        assert self._emit is not None
        await self._emit(event)

    def _next_turn_hook(self, config: AgentLoopConfig) -> Callable[[TurnContext], Any]:
        """The spec's own ``prepare_next_turn`` first, then a compaction when the next request
        would pass the threshold."""
        own = config.prepare_next_turn

        async def prepare_next_turn(turn: TurnContext) -> NextTurn | None:
            next_turn = await call_hook(own, turn) if own is not None else None
            context = next_turn.context if next_turn and next_turn.context else turn.context
            if not compaction_due(self.policy, config.model, context.messages):
                return next_turn
            compacted = await self._compact(list(context.messages))
            if compacted is None:
                return next_turn
            self.transcript = list(compacted)
            new_context = AgentContext(context.system_prompt, list(compacted), context.tools)
            if next_turn is None:
                return NextTurn(context=new_context)
            return NextTurn(new_context, next_turn.model, next_turn.thinking_level)

        return prepare_next_turn

    async def _compact(
        self, messages: list[AgentMessage], *, required: bool = False
    ) -> list[AgentMessage] | None:
        """``messages`` compacted, by the recorded outcome of a compaction step; ``None`` when
        it could not be done (logged: the run goes on with the transcript as it was)."""
        with anyio.CancelScope(shield=True):
            _kind, value, ended = await recorded(
                DBOS.run_step_async({"name": COMPACTION_STEP}, self._compaction_step, messages),
                "the compaction",
            )
        self.clock.advance(ended)
        if not isinstance(value, Compaction):  # the summary request failed
            level = logging.WARNING if required and not self.live.aborted else logging.INFO
            durable_logger.log(level, "Compaction was not done: %s", value)
            return None
        self.count += 1
        return apply_compaction(messages, value, durable_logger)

    async def _compaction_step(
        self, messages: list[AgentMessage]
    ) -> tuple[str, Compaction | str, int]:
        """The summary request: ``("compacted", compaction, end)`` or ``("failed", why, end)``."""
        config = self.summary_config
        try:
            compaction = await summarise_for_run(messages, config, self.policy, self.live)
        except CompactionError as exc:
            return "failed", exception_text(exc), step_end()
        return "compacted", compaction, step_end()
