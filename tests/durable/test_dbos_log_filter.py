"""What a worker lets through of DBOS's log: no SQL or parameters, no flood of repeats.

The records are logged for real on DBOS's logger, as DBOS logs them during an outage; the
filter's clock is a counter the test moves, so the interval is exact.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pi_core.durable._dbos_logs import REPEAT_SECONDS, DbosLogFilter

RETRY = (
    "Database connection failed: (psycopg.OperationalError) server closed the connection "
    "unexpectedly\n[SQL: INSERT INTO dbos.operation_outputs (output) VALUES (%(output)s)]\n"
    "[parameters: {'output': 'gASVa2V5IHNlY3JldCBwYXlsb2Fk'}]\n"
    "(Background on this error at: https://sqlalche.me/e/20/e3q8). Retrying in 1.00s"
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def dbos_log() -> Iterator[tuple[logging.Logger, Clock, Lines]]:
    logger = logging.getLogger("dbos.test-filter")  # a logger of its own, filtered as DBOS's is
    clock, lines = Clock(), Lines()
    log_filter = DbosLogFilter(clock)
    logger.addFilter(log_filter)
    logger.addHandler(lines)
    logger.propagate = False
    try:
        yield logger, clock, lines
    finally:
        logger.removeFilter(log_filter)
        logger.removeHandler(lines)


def retry(logger: logging.Logger) -> None:
    logger.warning(RETRY)  # one call site, as DBOS's retry loop is


def test_repeats_of_a_line_are_held_back_and_counted(
    dbos_log: tuple[logging.Logger, Clock, Lines],
) -> None:
    logger, clock, lines = dbos_log
    for _ in range(500):  # an outage's worth of retries within one interval
        retry(logger)
        clock.now += REPEAT_SECONDS / 1000
    clock.now += REPEAT_SECONDS
    retry(logger)
    assert len(lines.lines) == 2
    assert lines.lines[1].endswith(f"[499 more like it in the last {REPEAT_SECONDS:.0f} s]")


def test_no_statement_parameters_or_traceback_reach_the_log(
    dbos_log: tuple[logging.Logger, Clock, Lines],
) -> None:
    logger, _clock, lines = dbos_log
    try:
        raise ValueError("gASV payload in a traceback")
    except ValueError:
        logger.exception(RETRY)
    [line] = lines.lines
    assert line == (
        "Database connection failed: (psycopg.OperationalError) server closed the connection "
        "unexpectedly (ValueError)"
    )
