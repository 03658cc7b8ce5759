"""Task groups whose failure escapes as one exception, never as a bare ExceptionGroup.

The pattern is trio's own (``raise_single_exception_from_group``): a group that holds exactly one
error besides cancellations is that error; a group of several errors becomes one
:class:`ConcurrentTaskError` raised *from* the group, so the caller still sees every error in the
traceback and can reach them through ``group``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup

__all__ = ["ConcurrentTaskError", "unwrap_single_exception"]


class ConcurrentTaskError(Exception):
    """Several concurrent tasks failed at once; ``group`` (also the ``__cause__``) holds them all."""

    def __init__(self, group: BaseExceptionGroup[BaseException], errors: list[BaseException]):
        listed = ", ".join(repr(error) for error in errors)
        super().__init__(f"{len(errors)} concurrent tasks failed: {listed}")
        self.group = group


@contextmanager
def unwrap_single_exception() -> Iterator[None]:
    """Turn an exception group escaping the block into one exception.

    Task groups report every failure as a group, and a caller should see the error that actually
    happened. Cancellations in the group (the siblings a failure cancelled) do not count:

    * exactly one error (at any depth): that error is raised, as it was raised in its task;
    * a ``KeyboardInterrupt`` or ``SystemExit`` beside anything else: a new one of the same type
      is raised from the group;
    * several errors: :class:`ConcurrentTaskError` is raised from the group;
    * only cancellations: the first is raised, for the cancel scope that owns it.

    Raises:
        ConcurrentTaskError: several tasks of the group failed.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        _raise_one(group)


def _raise_one(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    leaves = list(_leaves(group))
    if len(leaves) == 1:
        _raise_keeping_context(leaves[0])
    for leaf in leaves:
        if isinstance(leaf, (KeyboardInterrupt, SystemExit)):
            raise type(leaf)(*leaf.args) from group
    cancellations = _cancellation_types()
    errors = [leaf for leaf in leaves if not isinstance(leaf, cancellations)]
    if len(errors) == 1:
        _raise_keeping_context(errors[0])
    if errors:
        raise ConcurrentTaskError(group, errors) from group
    _raise_keeping_context(leaves[0])


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _cancellation_types() -> tuple[type[BaseException], ...]:
    """What a cancel scope raises on either backend (trio's only if trio is in use)."""
    trio = sys.modules.get("trio")
    if trio is None:
        return (asyncio.CancelledError,)
    return (asyncio.CancelledError, trio.Cancelled)


def _raise_keeping_context(error: BaseException) -> NoReturn:
    # Raised here, the error would get the group as its implicit context (a cycle through the
    # group, and the context it really had would be lost): restore what it came with.
    context, suppress_context = error.__context__, error.__suppress_context__
    try:
        raise error
    finally:
        error.__context__ = context
        error.__suppress_context__ = suppress_context
