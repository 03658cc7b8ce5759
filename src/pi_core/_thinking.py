"""Which thinking levels a model takes, and the one a request asks for in its place.

A model's ``thinking_level_map`` says what it offers: a level mapped to ``None`` is one it does
not have (``{"off": None}``: it always thinks), and ``xhigh`` and ``max`` exist only where the
map names them. A level the model lacks becomes the nearest stronger one it has, else the
nearest weaker one, so ``"minimal"`` asks a model without it for ``"low"``, not for an error.
"""

from __future__ import annotations

from typing import Final, get_args

from ._messages import Model, ThinkingLevel

__all__ = [
    "THINKING_LEVELS",
    "clamp_thinking_level",
    "mapped_level",
    "supported_thinking_levels",
    "thinking_can_be_off",
]

THINKING_LEVELS: Final[tuple[ThinkingLevel, ...]] = get_args(ThinkingLevel)
"""Every thinking level, weakest first."""

_NAMED_ONLY: Final = frozenset({"xhigh", "max"})
"""The levels a model has only when its map names them."""


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """The thinking levels ``model`` takes, weakest first (``["off"]`` if it does not reason)."""
    if not model.reasoning:
        return ["off"]
    levels = model.thinking_level_map or {}
    return [
        level
        for level in THINKING_LEVELS
        if (level in levels if level in _NAMED_ONLY else True) and not _ruled_out(levels, level)
    ]


def clamp_thinking_level(model: Model, level: ThinkingLevel) -> ThinkingLevel:
    """``level`` if ``model`` takes it, else the nearest stronger level it takes, else the
    nearest weaker one."""
    supported = supported_thinking_levels(model)
    if level in supported:
        return level
    if level not in THINKING_LEVELS:
        return supported[0] if supported else "off"
    index = THINKING_LEVELS.index(level)
    stronger = [each for each in THINKING_LEVELS[index + 1 :] if each in supported]
    weaker = [each for each in reversed(THINKING_LEVELS[:index]) if each in supported]
    return (stronger or weaker or ["off"])[0]


def mapped_level(model: Model, level: str) -> str | None:
    """The provider's own word for ``level`` from the model's map; ``None`` when it has none."""
    word = (model.thinking_level_map or {}).get(level)
    return word if isinstance(word, str) else None


def thinking_can_be_off(model: Model) -> bool:
    """False for a model whose map rules ``"off"`` out: it always thinks, and a request must not
    ask it to stop."""
    return not _ruled_out(model.thinking_level_map or {}, "off")


def _ruled_out(levels: dict[str, str | None], level: str) -> bool:
    return level in levels and levels[level] is None
