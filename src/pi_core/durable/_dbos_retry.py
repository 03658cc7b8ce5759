"""The client's calls through a database that comes and goes: retried with backoff, bounded.

A database restart, a network blip or a SQLite file another process holds locked makes a call
fail (or, for a lock, wait inside DBOS without end). :func:`call_through_outages` runs the call in
a worker thread, retries the errors that pass (a lost connection, a lock) with exponential
backoff, and gives up with "database unreachable" (a :class:`DurableError`) once the bound is
reached. Other errors are raised at once: they are not the database being away.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread
import sqlalchemy.exc
from dbos._utils import retriable_postgres_exception, retriable_sqlite_exception

from ._dbos_logs import engine_error_text
from ._dbos_names import masked
from ._spec import DurableError

__all__ = [
    "FIRST_DELAY",
    "MAX_DELAY",
    "UNREACHABLE_AFTER",
    "call_through_outages",
    "is_missing_tables",
]

T = TypeVar("T")

UNREACHABLE_AFTER = 60.0
"""The default bound: seconds a client call keeps retrying a database it cannot reach."""
FIRST_DELAY = 0.1
MAX_DELAY = 5.0
"""The backoff between two attempts: from FIRST_DELAY, doubling, at most MAX_DELAY seconds."""

_logger = logging.getLogger("pi_core.durable")


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is the database being away for a while (DBOS's own judgement of it)."""
    if not isinstance(exc, Exception):
        return False
    return (
        retriable_postgres_exception(exc)
        or retriable_sqlite_exception(exc)
        or isinstance(exc, sqlalchemy.exc.TimeoutError)  # no pooled connection came free
    )


_UNDEFINED_TABLE = "42P01"
"""Postgres's SQLSTATE for a table (or its schema) that does not exist."""


def is_missing_tables(exc: sqlalchemy.exc.DBAPIError) -> bool:
    """Whether ``exc`` is the engine's tables missing: a database no worker has set up."""
    cause = exc.orig
    if getattr(cause, "sqlstate", None) == _UNDEFINED_TABLE:
        return True
    return isinstance(exc, sqlalchemy.exc.OperationalError) and "no such table" in str(cause)


async def call_through_outages(operation: Callable[[], T], *, database_url: str, bound: float) -> T:
    """Run ``operation`` in a worker thread until it succeeds, for at most ``bound`` seconds.

    An attempt still running at the bound (DBOS waits on a SQLite lock without end) is left to
    finish in its thread: a write may then still happen once the database is back.

    Raises:
        DurableError: "database unreachable", at the bound.
    """
    deadline = anyio.current_time() + bound
    delay = FIRST_DELAY
    last: BaseException | None = None
    while True:
        with anyio.move_on_after(max(deadline - anyio.current_time(), 0)):
            try:
                return await anyio.to_thread.run_sync(operation, abandon_on_cancel=True)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                last = exc
        if last is None or anyio.current_time() + delay >= deadline:
            raise _unreachable(database_url, bound, last)
        _logger.debug("database unreachable, retrying in %.1f s: %s", delay, _why(last))
        await anyio.sleep(delay)
        delay = min(delay * 2, MAX_DELAY)
        last = None


def _unreachable(database_url: str, bound: float, last: BaseException | None) -> DurableError:
    return DurableError(
        f"database unreachable: {masked(database_url)} did not answer within {bound:g} s "
        f"({_why(last)})"
    )


def _why(exc: BaseException | None) -> str:
    return "no answer, a lock held?" if exc is None else engine_error_text(exc)
