"""Two workers share a real Postgres; one is killed with SIGKILL mid-run and the other recovers
its runs: every run ends in success, and nothing that had finished runs a second time.

The tests drive subprocesses only, so they need no event-loop backend.
"""

from __future__ import annotations

import json
from pathlib import Path

from durable._counting_agents import counts
from durable._workers import running_worker, runs, start_counting_run, stop, wait_until

RUNS = 2
FINISHED_BEFORE_THE_KILL = {"model": 2, "mark-a": 1, "mark-b": 1, "slow": 1}
AFTER_THE_RECOVERY = {"model": 3, "mark-a": 1, "mark-b": 1, "slow": 2}


def test_recover_moves_a_dead_workers_runs_to_the_living_one(
    postgres_url: str, tmp_path: Path
) -> None:
    dirs = [tmp_path / f"run-{index}" for index in range(RUNS)]
    with running_worker(postgres_url, "doomed", stall=True) as doomed:
        run_ids = [start_counting_run(postgres_url, directory) for directory in dirs]
        for directory in dirs:
            wait_until((directory / "slow").exists, f"{directory.name} to reach its slow step")
        with running_worker(postgres_url, "survivor") as survivor:
            doomed.process.kill()  # SIGKILL, while the survivor serves the same queue
            doomed.finish()
            assert [counts(directory) for directory in dirs] == [FINISHED_BEFORE_THE_KILL] * RUNS
            moved = runs(postgres_url, "recover", "doomed")
            assert moved.returncode == 0, moved.stderr
            assert sorted(moved.stdout.split()) == sorted(run_ids)
            for run_id in run_ids:
                finished = runs(postgres_url, "result", run_id)
                assert finished.returncode == 0, finished.stderr
            stop(survivor)

    listed = [json.loads(line) for line in runs(postgres_url, "list", "--json").stdout.splitlines()]
    expected = dict.fromkeys(run_ids, ("success", "survivor"))
    assert {row["run_id"]: (row["state"], row["executor_id"]) for row in listed} == expected
    # Only the call in flight at the kill ran again: the marks and the model replies did not.
    assert [counts(directory) for directory in dirs] == [AFTER_THE_RECOVERY] * RUNS
