"""One home for the callables a user hands pi_core that may be sync or async.

The rule, for every listener, emit and hook: it may be a plain function, a coroutine function or
any callable; what it returns is awaited when it is awaitable and ignored otherwise, so a sync
listener such as ``lambda event: sys.stdout.write(event.type)`` (which returns an ``int``) is as
good as one returning ``None``. A hook's plain return value that is not of the hook's result type
counts as ``None`` (:func:`result_of`).

An emit or a listener is called for every event, so it is adapted once, when it is given
(:func:`awaiting`): a coroutine function is called as it is and costs nothing more, and only a
sync callable pays for a look at what it returned. A hook runs a few times per turn or per tool
call; :func:`call_hook` looks at what it returned each time, which also keeps right a sync function
that returns a coroutine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from inspect import isawaitable, iscoroutinefunction
from typing import Any, Final, ParamSpec, TypeVar

from typing_extensions import TypeIs

__all__ = ["READY", "awaiting", "call_hook", "is_async_callable", "needs_await", "result_of"]

P = ParamSpec("P")
T = TypeVar("T")

_PLAIN_TYPES: Final = frozenset((type(None), bool, int, float, str, bytes, list, tuple, dict))


def needs_await(value: object) -> TypeIs[Awaitable[Any]]:
    """Whether a returned value is to be awaited; plain values are told apart without an ABC
    check, since most callables are sync."""
    return type(value) not in _PLAIN_TYPES and isawaitable(value)


def is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` always gives a coroutine: a coroutine function, a bound method or
    ``functools.partial`` of one, or an object whose ``__call__`` is one."""
    return iscoroutinefunction(fn) or (callable(fn) and iscoroutinefunction(type(fn).__call__))


class _Ready:
    """An awaitable that is already done: what a sync callable's plain value becomes."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]  # an empty iterator: done at once


READY: Final = _Ready()


def awaiting(fn: Callable[P, object]) -> Callable[P, Awaitable[Any]]:
    """``fn`` as a caller that always awaits calls it, decided once: an async callable as it is,
    a sync one wrapped so that a plain value it returns becomes :data:`READY` (an awaitable it
    returns is passed on)."""
    if is_async_callable(fn):
        return fn  # type: ignore[return-value]  # it returns a coroutine on every call

    def sync(*args: P.args, **kwargs: P.kwargs) -> Awaitable[Any]:
        returned = fn(*args, **kwargs)
        return returned if needs_await(returned) else READY

    return sync


async def call_hook(hook: Callable[..., Any], *args: Any) -> Any:
    """Call a hook that may be sync or async; return its (awaited) result."""
    result = hook(*args)
    if needs_await(result):
        return await result
    return result


def result_of(value: object, result_type: type[T]) -> T | None:
    """``value`` if a hook returned a ``result_type``, else ``None`` (what a stray plain value
    counts as)."""
    return value if isinstance(value, result_type) else None
