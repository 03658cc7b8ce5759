"""``pi-core worker`` and ``pi-core runs`` in real processes, on SQLite and on a real Postgres.

A worker killed with SIGKILL in the middle of a run loses nothing that had finished: started
again with the same executor id it finishes the run, and only the tool call that was in flight
runs a second time. These tests drive subprocesses only, so they need no event-loop backend.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from durable._counting_agents import ANSWER, counts
from durable._workers import running_worker, runs, start_counting_run, stop, wait_until

FINISHED_BEFORE_THE_KILL = {"model": 2, "mark-a": 1, "mark-b": 1, "slow": 1}
AFTER_THE_RESTART = {"model": 3, "mark-a": 1, "mark-b": 1, "slow": 2}


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))


def test_a_run_finishes_after_its_worker_is_killed_and_restarted(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", stall=True) as first:
        run_id = start_counting_run(database_url, work)
        wait_until(lambda: (work / "slow").exists(), "the slow tool to start")
        first.process.kill()  # SIGKILL: no chance to clean up
    assert counts(work) == FINISHED_BEFORE_THE_KILL
    assert "running" in runs(database_url, "status", run_id).stdout

    with running_worker(database_url, "w1") as second:
        followed = runs(database_url, "events", run_id)
        stop(second)
    assert followed.returncode == 0, followed.stderr
    assert ANSWER in followed.stdout
    assert followed.stdout.count("✓ mark") == 2  # the recorded events, each delivered once
    assert "done · 3 turns · 3 tool calls" in followed.stdout
    assert counts(work) == AFTER_THE_RESTART

    status = json.loads(runs(database_url, "status", run_id, "--json").stdout)
    assert status["state"] == "success" and status["agent"] == "counting"
    result = runs(database_url, "result", run_id).stdout.splitlines()
    assert result[0] == "user: go" and result[-1] == f"assistant: {ANSWER}"
