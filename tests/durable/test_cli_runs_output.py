"""What ``pi-core runs`` prints about runs that have finished: recorded durations, readable
times, a header, and a refusal to steer what no longer listens.

One real worker process serves a SQLite database for the module; every command is a real
``pi-core runs`` process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import anyio
import pytest

from durable._workers import runs
from durable.workers import WorkerProcess, wait_for_line, wait_until_steps_recorded
from pi_core.durable import DurableError, DurableRuns

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("runs-output")
    url = f"sqlite:///{directory / 'runs.sqlite'}"
    worker = WorkerProcess(url, "output-tests", directory / "worker.log").start()
    try:
        yield url
    finally:
        worker.stop()


async def finished_run(database_url: str, directory: Path) -> str:
    """A run of the test agent whose slow tool ran until the fast ones were recorded."""
    async with DurableRuns(database_url) as client:
        with anyio.fail_after(30):
            run_id = await client.start("worker-test", "hello", params={"dir": str(directory)})
            await wait_for_line(directory, "tool_runs", "call-slow")
            await wait_until_steps_recorded(database_url, run_id, ["tool fast", "tool fast"])
            (directory / "release").touch()
            await client.result(run_id)
    return run_id


def shown(seconds: float) -> str:
    """A duration as the live view writes it."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


async def test_events_of_a_finished_run_show_its_recorded_durations(
    database_url: str, tmp_path: Path
) -> None:
    run_id = await finished_run(database_url, tmp_path)
    started: dict[str, int] = {}
    tools: dict[str, str] = {}
    async with DurableRuns(database_url) as client:
        async for _, at_ms, event in client.timed_events(run_id):
            assert at_ms is not None
            if event.type == "agent_start":
                run_started = at_ms
            elif event.type == "tool_execution_start":
                started[event.tool_call_id] = at_ms
            elif event.type == "tool_execution_end":
                tools[event.tool_call_id] = shown((at_ms - started[event.tool_call_id]) / 1000)
            elif event.type == "agent_end":
                # In seconds, as the view subtracts them: the difference of the milliseconds
                # rounds to another last digit when it ends in 5 ms.
                run_took = shown(at_ms / 1000 - run_started / 1000)
    # Read after the fact: every event arrives within milliseconds, whatever the run took.
    done = await anyio.to_thread.run_sync(runs, database_url, "events", run_id)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"  ✓ slow: slow ok ({tools['call-slow']})" in lines
    assert f"  ✓ fast: call-a ok ({tools['call-a']})" in lines
    assert lines[-1].endswith(f" · {run_took}")


async def test_steering_or_a_follow_up_for_a_finished_run_is_refused(
    database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "release").touch()
    run_id = await finished_run(database_url, tmp_path)
    for verb in ("steer", "follow-up"):
        done = await anyio.to_thread.run_sync(runs, database_url, verb, run_id, "too late")
        assert done.returncode == 1
        assert f"run {run_id!r} has ended (success)" in done.stderr
        assert "steered" not in done.stderr and "queued" not in done.stderr
    async with DurableRuns(database_url) as client:
        with pytest.raises(DurableError, match="has ended"):
            await client.steer(run_id, "too late")
        await client.abort(run_id)  # an abort of a finished run changes nothing, as documented


async def test_list_has_a_header_and_status_shows_the_creation_time_in_iso(
    database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "release").touch()
    run_id = await finished_run(database_url, tmp_path)
    done = await anyio.to_thread.run_sync(runs, database_url, "status", run_id, "--json")
    as_json = json.loads(done.stdout)
    created_ms = as_json["created_at"]
    assert isinstance(created_ms, int)  # --json keeps the milliseconds since the epoch
    iso = datetime.fromtimestamp(created_ms / 1000, tz=timezone.utc).isoformat(
        timespec="milliseconds"
    )
    iso = iso.replace("+00:00", "Z")
    status = (await anyio.to_thread.run_sync(runs, database_url, "status", run_id)).stdout
    assert f"created_at: {iso}" in status.splitlines()

    listed = (await anyio.to_thread.run_sync(runs, database_url, "list")).stdout.splitlines()
    assert re.split(r"\s+", listed[0]) == ["run_id", "agent", "state", "executor_id", "created_at"]
    [row] = [line for line in listed if line.startswith(run_id)]
    assert re.split(r"\s+", row) == [run_id, "worker-test", "success", "output-tests", iso]
