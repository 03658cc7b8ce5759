"""The client through database outages: a Postgres server stopped and started again, and a
SQLite file another process holds locked.

A client call retries while the database is away, within its bound; past the bound it says
"database unreachable". A run's failure is reported only for a run that failed.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from durable._postgres import PostgresServer, running_postgres
from durable.workers import WorkerProcess, wait_for_line
from pi_core import TextContent
from pi_core.durable import DurableError, DurableRuns

pytestmark = pytest.mark.anyio

_caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="")


class RetriesSeen(logging.Handler):
    """Notes which callers (a context variable each task sets) have retried a call."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.callers: set[str] = set()
        self.changed = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("database unreachable, retrying"):
            self.callers.add(_caller.get())
            self.changed.set()

    async def wait_for(self, *callers: str) -> None:
        while not set(callers) <= self.callers:
            self.changed = anyio.Event()
            await self.changed.wait()


@pytest.fixture
def retries() -> Iterator[RetriesSeen]:
    logger = logging.getLogger("pi_core.durable")
    handler, level = RetriesSeen(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A server of this test's own: the test stops it."""
    with running_postgres() as server:
        yield server


async def test_result_and_events_wait_out_a_postgres_outage_and_the_run_succeeds(
    own_postgres: PostgresServer, retries: RetriesSeen, tmp_path: Path
) -> None:
    url = own_postgres.create_database("outage")
    worker = WorkerProcess(url, "outage", tmp_path / "worker.log").start()
    outcome: dict[str, object] = {}

    async def wait_for_result(runs: DurableRuns, run_id: str) -> None:
        _caller.set("result")
        outcome["result"] = await runs.result(run_id)

    async def read_events(runs: DurableRuns, run_id: str) -> None:
        _caller.set("events")
        outcome["events"] = [event.type async for _, event in runs.events(run_id)]

    try:
        async with DurableRuns(url) as runs, DurableRuns(url) as reader:
            with anyio.fail_after(90):
                run_id = await runs.start("worker-test", "hello", params={"dir": str(tmp_path)})
                await runs.status(run_id)
                await reader.status(run_id)
                await wait_for_line(tmp_path, "tool_runs", "call-slow")
                await anyio.to_thread.run_sync(own_postgres.pause)
                async with DurableRuns(url, unreachable_after=0.5) as impatient:
                    with pytest.raises(DurableError, match="database unreachable: "):
                        await impatient.status(run_id)
                async with anyio.create_task_group() as group:
                    group.start_soon(wait_for_result, runs, run_id)
                    group.start_soon(read_events, reader, run_id)
                    await retries.wait_for("result", "events")  # both met the outage
                    await anyio.to_thread.run_sync(own_postgres.resume)
                    (tmp_path / "release").touch()
                status = await runs.status(run_id)
    finally:
        worker.stop()
    messages = outcome["result"]
    assert isinstance(messages, list)
    assert messages[-1].content == [TextContent("done after 3 results and 1 user messages")]
    assert outcome["events"][-1] == "agent_end"  # type: ignore[index]
    assert status.state == "success"


HOLD_LOCK = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("PRAGMA locking_mode=EXCLUSIVE")
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
connection.execute("COMMIT")
"""


async def test_a_call_on_a_sqlite_file_locked_by_another_process_is_bounded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    url = f"sqlite:///{path}"
    worker = WorkerProcess(url, "locked", tmp_path / "worker.log").start()
    (tmp_path / "release").touch()
    try:
        async with DurableRuns(url) as runs:
            with anyio.fail_after(60):
                run_id = await runs.start("worker-test", "hello", params={"dir": str(tmp_path)})
                await runs.result(run_id)
        async with await anyio.open_process([sys.executable, "-c", HOLD_LOCK, str(path)]) as holder:
            assert holder.stdout is not None and holder.stdin is not None
            with anyio.fail_after(30):
                assert (await holder.stdout.receive()).strip() == b"locked"
            async with DurableRuns(url, unreachable_after=1) as runs:
                with anyio.fail_after(30), pytest.raises(DurableError, match="unreachable"):
                    await runs.status(run_id)
            await holder.stdin.aclose()  # the holder commits and exits: the lock is gone
            await holder.wait()
        async with DurableRuns(url) as runs:
            with anyio.fail_after(60):
                assert (await runs.status(run_id)).state == "success"
    finally:
        worker.stop()
