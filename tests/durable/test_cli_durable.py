"""``pi-core worker`` and ``pi-core runs`` in real processes.

On a real Postgres, a worker killed with SIGKILL in the middle of a run loses nothing that had
finished: started again with the same executor id it finishes the run, and only the tool call that
was in flight runs a second time (the same story on SQLite is in test_durable_crash.py). On
SQLite, a run is cancelled, resumed and aborted from the shell. These tests drive subprocesses
only, so they need no event-loop backend.
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


def test_cancel_resume_and_abort_from_the_shell(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    cancelled, aborted = tmp_path / "cancelled", tmp_path / "aborted"
    with running_worker(database_url, "w1", stall=True) as worker:
        run_id = start_counting_run(database_url, cancelled)
        wait_until((cancelled / "slow").exists, "the slow tool to start")
        assert runs(database_url, "cancel", run_id).returncode == 0
        ended = runs(database_url, "events", run_id)
        assert ended.returncode == 130
        assert "ended without finishing: cancelled" in ended.stdout
        assert runs(database_url, "resume", run_id).returncode == 0
        assert (
            runs(database_url, "result", run_id).stdout.splitlines()[-1] == f"assistant: {ANSWER}"
        )
        assert counts(cancelled) == AFTER_THE_RESTART  # the slow step ran again, nothing else

        run_id = start_counting_run(database_url, aborted)
        wait_until((aborted / "slow").exists, "the slow tool to start")
        assert runs(database_url, "abort", run_id).returncode == 0
        closed_out = runs(database_url, "events", run_id)
        stop(worker)
    assert closed_out.returncode == 130  # soft abort: closed out like an in-process abort
    assert "✗ slow: Operation aborted" in closed_out.stdout
    assert "aborted · 2 turns · 3 tool calls" in closed_out.stdout
