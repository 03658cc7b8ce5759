"""Task groups whose single failure escapes as itself, not wrapped in an ExceptionGroup."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup

__all__ = ["unwrap_single_exception"]


@contextmanager
def unwrap_single_exception() -> Iterator[None]:
    """Re-raise an exception group that holds exactly one exception (at any depth) as that one.

    Task groups report every failure as a group; a caller of pi_core should see the error that
    actually happened. Groups of several real errors are left as they are.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        single = _single_leaf(group)
        if single is None:
            raise
        # Raised here, the error would get the group as its implicit context (a cycle through the
        # group, and the context it really had would be lost): restore what it came with.
        context, suppress_context = single.__context__, single.__suppress_context__
        try:
            raise single
        finally:
            single.__context__ = context
            single.__suppress_context__ = suppress_context


def _single_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        if len(exc.exceptions) != 1:
            return None
        exc = exc.exceptions[0]
    return exc
