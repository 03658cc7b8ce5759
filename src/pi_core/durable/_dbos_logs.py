"""What a worker lets through of DBOS's own log: expected transitions as one line, no payloads,
and no flood while the database is away.

DBOS logs a cancelled run's execution stopping as a WARNING and then an ERROR with a traceback,
though nothing failed; during an outage it logs every retry of every call, with the SQL and its
parameters (pickled run data) in the text. :class:`DbosLogFilter`, installed on DBOS's logger by
the worker, turns the first into one INFO line of ``pi_core.durable``, cuts the statement and
its parameters out of every message, and lets one line per call site through per interval,
with the count of those it held back.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from dbos._error import DBOSAwaitedWorkflowCancelledError, DBOSWorkflowCancelledError

__all__ = ["DbosLogFilter", "durable_logger", "engine_error_text", "filtered_dbos_log"]

DBOS_LOGGER = "dbos"
durable_logger = logging.getLogger("pi_core.durable")

REPEAT_SECONDS = 10.0
"""At most one line per DBOS call site in this many seconds; the next one says how many were
held back."""
MESSAGE_LIMIT = 300
"""Characters of a DBOS message kept (after its SQL and parameters are cut)."""

_CANCELLED = re.compile(r"Workflow (\S+) was cancelled during execution")
_NOT_OWNED = re.compile(r"Workflow (\S+) (?:is no longer owned|outcome was not recorded)")
_TASK_CANCELLED = "Asyncio task cancelled for workflow or step"
_PAYLOAD = re.compile(r"\s*(\[SQL:|\[parameters:|\(Background on this error at:)")


@contextmanager
def filtered_dbos_log() -> Iterator[None]:
    """DBOS's log goes through a :class:`DbosLogFilter` for the length of the block."""
    dbos_logger = logging.getLogger(DBOS_LOGGER)
    log_filter = DbosLogFilter()
    dbos_logger.addFilter(log_filter)
    try:
        yield
    finally:
        dbos_logger.removeFilter(log_filter)


class DbosLogFilter(logging.Filter):
    """A filter for DBOS's logger: see the module's docstring."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._last: dict[tuple[str, int], float] = {}
        self._held: dict[tuple[str, int], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if _expected(record):
            return False
        if record.levelno < logging.WARNING:
            return True
        site = (record.pathname, record.lineno)
        now = self._clock()
        last = self._last.get(site)
        if last is not None and now - last < REPEAT_SECONDS:
            self._held[site] = self._held.get(site, 0) + 1
            return False
        self._last[site] = now
        held = self._held.pop(site, 0)
        _strip_payload(record, held)
        return True


def _expected(record: logging.LogRecord) -> bool:
    """Whether the record is a transition a run goes through normally; say it in one line."""
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, (DBOSAwaitedWorkflowCancelledError, DBOSWorkflowCancelledError)):
        return True  # the cancelled execution's stop, already said (below)
    message = record.getMessage()
    if message.startswith(_TASK_CANCELLED):  # a step still running when the worker stops
        return True
    if (found := _CANCELLED.match(message)) is not None:
        durable_logger.info(
            "run %s was cancelled: this execution of it stops (resume continues the run)",
            found.group(1),
        )
        return True
    if (found := _NOT_OWNED.match(message)) is not None:
        durable_logger.info(
            "run %s was resumed or recovered: its earlier execution here stops",
            found.group(1),
        )
        return True
    return False


def engine_error_text(exc: BaseException) -> str:
    """The text of an error of the engine or its database, without the statement and its
    parameters (a run's pickled data) that SQLAlchemy puts in it; at most MESSAGE_LIMIT long."""
    return _without_payload(str(exc) or type(exc).__name__)


def _without_payload(text: str) -> str:
    text = _PAYLOAD.split(text, maxsplit=1)[0].strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + "…"


def _strip_payload(record: logging.LogRecord, held: int) -> None:
    """Keep the message's first part, without the statement, its parameters or a traceback."""
    message = _without_payload(record.getMessage())
    if record.exc_info and record.exc_info[1] is not None:
        message += f" ({type(record.exc_info[1]).__name__})"
    if held:
        message += f" [{held} more like it in the last {REPEAT_SECONDS:.0f} s]"
    record.msg, record.args = message, None
    record.exc_info, record.exc_text = None, None
