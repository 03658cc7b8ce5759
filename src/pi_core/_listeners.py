"""Agent listeners: ``listener(event, signal)`` or ``listener(event)``, sync or async."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from ._events import AgentEvent
from .nursery import AbortSignal

__all__ = ["AgentListener", "TwoArgumentListener", "as_two_argument_listener"]

AgentListener: TypeAlias = (
    Callable[[AgentEvent, AbortSignal], Awaitable[None] | None]
    | Callable[[AgentEvent], Awaitable[None] | None]
)
"""``listener(event, signal)`` or ``listener(event)``: sync or async; awaited in subscription
order. ``signal`` is the run's :class:`~pi_core.AbortSignal`."""

TwoArgumentListener: TypeAlias = Callable[[AgentEvent, AbortSignal], Awaitable[None] | None]
"""A listener as a run calls it."""
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def as_two_argument_listener(listener: AgentListener) -> TwoArgumentListener:
    """``listener`` as the run calls it, ``(event, signal)``, decided once from its signature.

    Raises:
        TypeError: ``listener`` is not callable with ``(event)`` or ``(event, signal)``.
    """
    if _positional_arity(listener) == 1:
        one_argument: Callable[[AgentEvent], Awaitable[None] | None] = listener  # type: ignore[assignment]

        def call(event: AgentEvent, signal: AbortSignal) -> Awaitable[None] | None:
            return one_argument(event)

        return call
    return listener  # type: ignore[return-value]


def _positional_arity(listener: AgentListener) -> int:
    """1 or 2: how many positional arguments to pass ``listener``."""
    if not callable(listener):
        raise TypeError(f"a listener must be callable, not {type(listener).__name__}")
    try:
        parameters = inspect.signature(listener).parameters.values()
    except (TypeError, ValueError):  # no signature to read (some builtins): call it as documented
        return 2
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 2
    positional = [p for p in parameters if p.kind in _POSITIONAL]
    required = [p for p in parameters if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    if len(required) <= 2 and len(positional) >= 2:
        return 2
    if len(required) <= 1 and len(positional) == 1:
        return 1
    raise TypeError(
        f"a listener is called as listener(event) or listener(event, signal); "
        f"{_name(listener)}{inspect.signature(listener)} cannot be"
    )


def _name(listener: object) -> str:
    return getattr(listener, "__qualname__", None) or type(listener).__qualname__
