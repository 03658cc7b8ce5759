"""Two workers share a real Postgres; one is killed with SIGKILL mid-run and the other recovers
its runs: every run ends in success, and nothing that had finished runs a second time.

The tests drive subprocesses only, so they need no event-loop backend.
"""

from __future__ import annotations

import json
from pathlib import Path

from durable._counting_agents import counts
from durable._workers import running_worker, runs, start_counting_run, stop, wait_until

RUNS = 3


def test_recover_moves_a_dead_workers_runs_to_the_living_one(
    postgres_url: str, tmp_path: Path
) -> None:
    dirs = [tmp_path / f"run-{index}" for index in range(RUNS)]
    with running_worker(postgres_url, "doomed", stall=True, concurrency=1) as doomed:
        run_ids = [start_counting_run(postgres_url, directory) for directory in dirs]
        wait_until(lambda: any((d / "slow").exists() for d in dirs), "a run to reach its slow step")
        stalled = next(index for index, d in enumerate(dirs) if (d / "slow").exists())
        with running_worker(postgres_url, "survivor") as survivor:
            others = [index for index in range(RUNS) if index != stalled]
            for index in others:  # the doomed worker is full: the survivor serves the rest
                assert runs(postgres_url, "result", run_ids[index]).returncode == 0
            doomed.process.kill()
            doomed.finish()
            moved = runs(postgres_url, "recover", "doomed")
            assert moved.returncode == 0, moved.stderr
            assert moved.stdout.split() == [run_ids[stalled]]
            assert runs(postgres_url, "result", run_ids[stalled]).returncode == 0
            stop(survivor)

    listed = [json.loads(line) for line in runs(postgres_url, "list", "--json").stdout.splitlines()]
    assert sorted(row["run_id"] for row in listed) == sorted(run_ids)
    assert {row["state"] for row in listed} == {"success"}
    for index, directory in enumerate(dirs):
        slow_calls = 2 if index == stalled else 1  # only the call in flight at the kill ran again
        assert counts(directory) == {"model": 3, "mark-a": 1, "mark-b": 1, "slow": slow_calls}
