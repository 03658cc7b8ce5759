"""``pi-core chat`` compacts by itself: a long chat keeps fitting in the model's context window."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from .. import Agent, Compaction, CompactionPolicy

__all__ = ["KEEP_RECENT_TOKENS", "turn_on_compaction"]

KEEP_RECENT_TOKENS = 20_000
"""How much of the latest conversation a compaction keeps word for word, at most: a quarter of
the context window when that is less (a small local model)."""


def turn_on_compaction(
    agent: Agent, note: Callable[[str], object], context_window: int | None = None
) -> bool:
    """Give ``agent`` a :class:`CompactionPolicy` and have ``note`` tell each compaction.

    ``context_window`` (tokens) replaces the model's own, for a model the catalogue does not
    know. Returns whether compaction is on: never for a model whose context window is unknown.
    """
    if context_window is not None:
        agent.model = attrs.evolve(agent.model, context_window=context_window)
    window = agent.model.context_window
    if not window:
        return False
    agent.compaction = CompactionPolicy(keep_recent_tokens=min(KEEP_RECENT_TOKENS, window // 4))

    def tell(compaction: Compaction) -> None:
        note(
            f"compacted automatically: {compaction.first_kept_index} messages summarised "
            f"(about {compaction.tokens_before} tokens before)"
        )

    agent.on_compaction(tell)
    return True
