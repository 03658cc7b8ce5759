"""What a run may spend: :class:`RunLimits`, and :class:`LimitReached`, the limit that ended it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal, TypeAlias

import attrs

from ._messages import Usage

__all__ = ["LimitCounter", "LimitKind", "LimitReached", "RunLimits", "limits_left"]

LimitKind: TypeAlias = Literal[
    "max_turns",
    "max_input_tokens",
    "max_output_tokens",
    "max_total_tokens",
    "max_cost",
    "deadline",
]


def _positive_int(_instance: object, attribute: attrs.Attribute[int | None], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be a positive int or None, not {value!r}")


def _positive_number(
    _instance: object, attribute: attrs.Attribute[float | None], value: object
) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value > 0
        or math.isnan(value)
    ):
        raise ValueError(f"{attribute.name} must be a positive number or None, not {value!r}")


@attrs.frozen
class RunLimits:
    """What one run may spend before it ends; every field is optional, ``None`` means no limit.

    Each run counts afresh (a ``continue_()`` after a limit starts from zero). A turn, token or
    cost limit is checked when a reply ends: once it is reached, that reply's tool calls still
    run, then the run ends instead of making another request. The ``deadline`` aborts the run
    when it expires, with the reason ``Run deadline of <n> s exceeded``.

    Raises:
        ValueError: a limit that is zero, negative, or not a number.
    """

    max_turns: int | None = attrs.field(default=None, validator=_positive_int)
    """Model requests of the run."""
    max_input_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    """The replies' ``usage.input`` added up."""
    max_output_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    """The replies' ``usage.output`` added up."""
    max_total_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    """The replies' ``usage.total_tokens`` added up."""
    max_cost: float | None = attrs.field(default=None, validator=_positive_number)
    """Dollars, from the replies' ``usage.cost`` (the model's prices in the catalogue)."""
    deadline: float | None = attrs.field(default=None, validator=_positive_number)
    """Seconds from the run's start."""


@attrs.frozen
class LimitReached:
    """The limit that ended a run: which one, its value, and what the run had counted."""

    kind: LimitKind
    limit: float
    """The limit as given."""
    value: float
    """What the run had spent when it ended: turns, tokens, dollars, or seconds for
    ``"deadline"``."""


class LimitCounter:
    """What one run has spent so far, against its :class:`RunLimits`."""

    __slots__ = ("cost", "input", "limits", "output", "total", "turns")

    def __init__(self, limits: RunLimits) -> None:
        self.limits = limits
        self.turns = 0
        self.input = 0
        self.output = 0
        self.total = 0
        self.cost = 0.0

    def add(self, usage: Usage) -> LimitReached | None:
        """Count one reply (a model request) and its ``usage``; return the first limit reached."""
        self.turns += 1
        self.input += usage.input
        self.output += usage.output
        self.total += usage.total_tokens
        self.cost += usage.cost.total
        limits = self.limits
        for kind, limit, value in (
            ("max_turns", limits.max_turns, self.turns),
            ("max_input_tokens", limits.max_input_tokens, self.input),
            ("max_output_tokens", limits.max_output_tokens, self.output),
            ("max_total_tokens", limits.max_total_tokens, self.total),
            ("max_cost", limits.max_cost, self.cost),
        ):
            if limit is not None and value >= limit:
                return LimitReached(kind, limit, value)  # type: ignore[arg-type]
        return None


def limits_left(limits: RunLimits, spent: Iterable[Usage]) -> RunLimits | LimitReached:
    """What is left of ``limits`` once replies that used ``spent`` (one usage per model request)
    have been counted: the turn, token and cost limits less that spending (the deadline as it
    is), or the limit the spending reached.

    For an engine that runs one run of its user's in several loop runs (a durable run going on
    after the decisions on its held calls): each part gets what the earlier ones left.
    """
    counter = LimitCounter(limits)
    for usage in spent:
        reached = counter.add(usage)
        if reached is not None:
            return reached

    def less(limit: float | None, value: float) -> Any:
        return None if limit is None else limit - value

    return attrs.evolve(
        limits,
        max_turns=less(limits.max_turns, counter.turns),
        max_input_tokens=less(limits.max_input_tokens, counter.input),
        max_output_tokens=less(limits.max_output_tokens, counter.output),
        max_total_tokens=less(limits.max_total_tokens, counter.total),
        max_cost=less(limits.max_cost, counter.cost),
    )
