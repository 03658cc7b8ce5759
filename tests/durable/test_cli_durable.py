"""``pi-core worker`` and ``pi-core runs`` in real processes, on a real Postgres.

A worker killed with SIGKILL in the middle of a run loses nothing that had finished: started
again with the same executor id it finishes the run, and only the tool call that was in flight
runs a second time (the same story on SQLite, in-process, is in test_durable_crash.py). These tests
drive subprocesses only, so they need no event-loop backend.
"""

from __future__ import annotations

import json
from pathlib import Path

from durable._counting_agents import ANSWER, counts
from durable._workers import running_worker, runs, start_counting_run, stop, wait_until

FINISHED_BEFORE_THE_KILL = {"model": 2, "mark-a": 1, "mark-b": 1, "slow": 1}
AFTER_THE_RESTART = {"model": 3, "mark-a": 1, "mark-b": 1, "slow": 2}


def test_a_run_finishes_after_its_worker_is_killed_and_restarted(
    postgres_url: str, tmp_path: Path
) -> None:
    database_url = postgres_url
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", stall=True) as first:
        run_id = start_counting_run(database_url, work)
        wait_until(lambda: (work / "slow").exists(), "the slow tool to start")
        first.process.kill()  # SIGKILL: no chance to clean up
    assert counts(work) == FINISHED_BEFORE_THE_KILL

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
