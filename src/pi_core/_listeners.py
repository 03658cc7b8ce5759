"""Agent listeners: ``listener(event, signal)`` or ``listener(event)``, sync or async.

A listener's form is read once, when it is subscribed: the run calls the adapted listener with
``(event, signal)`` and awaits whatever it returns (see :mod:`pi_core._maybe_async`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias, cast

from ._events import AgentEvent
from ._maybe_async import awaiting
from .nursery import AbortSignal

__all__ = ["AgentListener", "AwaitingListener", "as_awaiting_listener"]

AgentListener: TypeAlias = (
    Callable[[AgentEvent, AbortSignal], object] | Callable[[AgentEvent], object]
)
"""``listener(event, signal)`` or ``listener(event)``: sync or async; awaited in subscription
order. ``signal`` is the run's :class:`~pi_core.AbortSignal`. What a sync listener returns is
ignored."""

AwaitingListener: TypeAlias = Callable[[AgentEvent, AbortSignal], Awaitable[None]]
"""A listener as a run calls it: with ``(event, signal)``, awaiting what it returns."""
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def as_awaiting_listener(listener: AgentListener) -> AwaitingListener:
    """``listener`` as the run calls it, decided once from its signature and its kind.

    Raises:
        TypeError: ``listener`` is not callable with ``(event)`` or ``(event, signal)``.
    """
    if _positional_arity(listener) == 1:
        one_argument = awaiting(cast("Callable[[AgentEvent], object]", listener))

        def call(event: AgentEvent, signal: AbortSignal) -> Awaitable[None]:
            return one_argument(event)

        return call
    return awaiting(cast("Callable[[AgentEvent, AbortSignal], object]", listener))


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
