"""How an Agent with a :class:`CompactionPolicy` compacts its transcript by itself.

Compaction happens between requests, never inside a tool batch: before a run's first request
(the transcript with the run's prompts), after each turn through the run's ``prepare_next_turn``
(the working context of the next turn is replaced, and the Agent's transcript with it), and once
after a run whose request the provider refused because the context was too long: the failed
reply is dropped, the transcript compacted, and the run continued. An Agent without a policy
pays nothing for any of this: it never builds the compactor's hooks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ._compaction import Compaction, CompactionError, CompactionPolicy, compact, compacted_messages
from ._hooks import AgentLoopConfig, NextTurn, TurnContext
from ._log import logger
from ._maybe_async import call_hook, result_of
from ._messages import AgentContext, AgentMessage, AssistantMessage, Model
from ._overflow import is_context_overflow
from ._texts import exception_text
from ._tokens import estimate_tokens
from .nursery import AbortSignal

if TYPE_CHECKING:
    from ._agent import Agent, _ActiveRun
    from ._approvals import Decision

__all__ = [
    "OVERFLOW_AFTER_COMPACTION",
    "AgentCompactor",
    "apply_compaction",
    "compaction_due",
    "summarise_for_run",
]

OVERFLOW_AFTER_COMPACTION = (
    "The context is still too long for the model after compacting the conversation: {}"
)
"""The error of a run whose request overflowed the context again after its compaction."""


class AgentCompactor:
    """The compaction of one Agent: its policy, its callbacks, and the hooks of its runs."""

    __slots__ = ("_agent", "_callbacks", "_config", "policy")

    def __init__(self, agent: Agent, policy: CompactionPolicy | None) -> None:
        self._agent = agent
        self.policy = policy
        self._callbacks: dict[int, Callable[[Compaction], object]] = {}
        self._config: AgentLoopConfig | None = None
        """The config of the run in progress, which its ``prepare_next_turn`` compacts with."""

    def add_callback(self, callback: Callable[[Compaction], object]) -> Callable[[], bool]:
        key = id(callback)
        self._callbacks[key] = callback
        return lambda: self._callbacks.pop(key, None) is not None

    async def run(
        self,
        prompts: Sequence[AgentMessage],
        config: AgentLoopConfig,
        active: _ActiveRun,
        decisions: Mapping[str, Decision] | None,
    ) -> list[AgentMessage]:
        """The Agent's run with compaction before it and the overflow retry after it (which
        continues the same run's control: its limits go on counting)."""
        agent = self._agent
        signal = active.signal
        state = agent.state
        self._config = config
        if self._over_threshold([*state.messages, *prompts], config):
            await self._compact(list(state.messages), config, signal)
        new = await agent._run_loop(prompts, config, active, decisions)
        failed = new[-1] if new else None
        if failed is None or not is_context_overflow(failed) or signal.aborted:
            return new
        # The request did not fit: drop the failed reply, compact, and continue once.
        logger.info("The context was too long for %s: compacting and retrying", config.model.id)
        transcript = [m for m in state.messages if m is not failed]
        if not await self._compact(transcript, config, signal, required=True):
            return new
        state._start_run()
        retried = await agent._run_loop((), config, active)
        again = retried[-1] if retried else None
        if isinstance(again, AssistantMessage) and is_context_overflow(again):
            state._error_message = OVERFLOW_AFTER_COMPACTION.format(again.error_message)
        return [*(m for m in new if m is not failed), *retried]

    async def compact_now(
        self, instructions: str | None, config: AgentLoopConfig, signal: AbortSignal
    ) -> Compaction:
        """Compact the Agent's transcript at once (``Agent.compact``)."""
        policy = self.policy or CompactionPolicy()
        if instructions is not None:
            policy = attrs.evolve(policy, instructions=instructions)
        messages = list(self._agent.state.messages)
        compaction = await summarise_for_run(messages, config, policy, signal)
        self._replace(messages, compaction)
        return compaction

    def next_turn_hook(self, settings: dict[str, Any]) -> Callable[[TurnContext], Any]:
        """The run's ``prepare_next_turn``: the Agent's own first, then compaction when the
        next request would pass the threshold."""
        own = settings["prepare_next_turn"]

        async def prepare_next_turn(turn: TurnContext) -> NextTurn | None:
            next_turn = None
            if own is not None:
                next_turn = result_of(await call_hook(own, turn), NextTurn)
            context = next_turn.context if next_turn and next_turn.context else turn.context
            config = self._config
            active = self._agent.signal
            if (
                config is None
                or active is None
                or not self._over_threshold(context.messages, config)
            ):
                return next_turn
            compacted = await self._compact(list(context.messages), config, active)
            if compacted is None:
                return next_turn
            new_context = AgentContext(context.system_prompt, list(compacted), context.tools)
            if next_turn is None:
                return NextTurn(context=new_context)
            return attrs.evolve(next_turn, context=new_context)

        return prepare_next_turn

    def _over_threshold(self, messages: Sequence[AgentMessage], config: AgentLoopConfig) -> bool:
        policy = self.policy
        return policy is not None and compaction_due(policy, config.model, messages)

    async def _compact(
        self,
        messages: list[AgentMessage],
        config: AgentLoopConfig,
        signal: AbortSignal,
        *,
        required: bool = False,
    ) -> list[AgentMessage] | None:
        """Compact ``messages`` into the Agent's transcript; ``None`` when it could not be done
        (logged: the run goes on with the transcript as it was)."""
        assert self.policy is not None
        try:
            compaction = await summarise_for_run(messages, config, self.policy, signal)
        except CompactionError as exc:
            level = logging.WARNING if required and not signal.aborted else logging.INFO
            logger.log(level, "Compaction was not done: %s", exception_text(exc))
            return None
        return self._replace(messages, compaction)

    def _replace(self, messages: list[AgentMessage], compaction: Compaction) -> list[AgentMessage]:
        """Put the compacted transcript in place, say so, and tell the callbacks."""
        compacted = apply_compaction(messages, compaction)
        self._agent.state._compacted(list(compacted), compaction)
        for callback in list(self._callbacks.values()):
            callback(compaction)
        return compacted


def compaction_due(
    policy: CompactionPolicy, model: Model, messages: Sequence[AgentMessage]
) -> bool:
    """Whether a request of ``messages`` to ``model`` passes the policy's threshold (never for
    a model whose context window is unknown)."""
    window = model.context_window
    return bool(window) and estimate_tokens(messages) > policy.threshold * window


async def summarise_for_run(
    messages: Sequence[AgentMessage],
    config: AgentLoopConfig,
    policy: CompactionPolicy,
    signal: AbortSignal | None,
) -> Compaction:
    """:func:`compact` as a run's compaction makes it: with the policy's model (or the run's),
    the run's stream function and options, and the key its ``get_api_key`` gives.

    Raises:
        CompactionError: nothing to compact, or the summary request failed or was aborted.
    """
    model = policy.model if policy.model is not None else config.model
    options = config.options
    if config.get_api_key is not None:
        key = result_of(await call_hook(config.get_api_key, model.provider), str)
        if key:
            options = attrs.evolve(options, api_key=key)
    return await compact(
        messages,
        model=model,
        stream_fn=config.stream_fn,
        keep_recent_tokens=policy.keep_recent_tokens,
        instructions=policy.instructions,
        signal=signal,
        options=options,
    )


def apply_compaction(
    messages: Sequence[AgentMessage],
    compaction: Compaction,
    log: logging.Logger = logger,
) -> list[AgentMessage]:
    """The transcript ``messages`` become after ``compaction``, and the INFO line on ``log``
    (the ``pi_core`` logger or one below it) that makes every compaction visible."""
    compacted = compacted_messages(messages, compaction)
    log.info(
        "Compacted the conversation: %d messages (about %d tokens) summarised, %d kept",
        compaction.first_kept_index,
        compaction.tokens_before,
        len(messages) - compaction.first_kept_index,
    )
    return compacted
