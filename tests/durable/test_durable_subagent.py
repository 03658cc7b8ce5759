"""A durable run whose tool call runs a sub-agent: the worker is SIGKILLed while the child runs.

The sub-agent call is one step of the parent's run. After the restart the parent's first reply
is not asked for again, and the child, unfinished, runs again from its start.
"""

from __future__ import annotations

import json
from pathlib import Path

from durable._counting_agents import counts
from durable._subagent_agents import ANSWER, CHILD_ANSWER
from durable._workers import LiveCli, run_cli, stop, wait_until, worker_env
from durable.durable_agents import lines

TARGET = "durable._subagent_agents:agents"


def worker(url: str, *, stall: bool) -> LiveCli:
    args = ["worker", TARGET, "--db", url, "--executor-id", "delegator"]
    return LiveCli(*args, env=worker_env(stall=stall), merge_stderr=True)


def test_a_killed_worker_runs_the_unfinished_child_again_from_its_start(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    work = tmp_path / "work"
    work.mkdir()
    with worker(url, stall=True) as doomed:
        doomed.wait_for(f"serving {TARGET}")
        started = run_cli(
            "runs",
            "start",
            "delegating",
            "go",
            "--params",
            json.dumps({"dir": str(work)}),
            "--db",
            url,
            env=worker_env(),
        )
        assert started.returncode == 0, started.stderr
        run_id = started.stdout.strip()
        # The line written, not merely the file opened: the kill must not land in between.
        wait_until(lambda: lines(work, "slow") == ["x"], "the child to reach its slow step")
        doomed.process.kill()  # SIGKILL, while the child's tool runs
        doomed.finish()
    assert counts(work) == {"model": 1, "child-model": 1, "slow": 1}

    with worker(url, stall=False) as restarted:
        restarted.wait_for(f"serving {TARGET}")
        finished = run_cli("runs", "result", run_id, "--json", "--db", url, env=worker_env())
        assert finished.returncode == 0, finished.stderr
        stop(restarted)

    # The parent's first reply was recorded; the child ran again from its start.
    assert counts(work) == {"model": 2, "child-model": 3, "slow": 2}
    messages = [json.loads(line) for line in finished.stdout.splitlines()]
    [result] = [m for m in messages if m.get("role") == "toolResult"]
    assert result["content"] == [{"type": "text", "text": CHILD_ANSWER}]
    assert messages[-1]["content"][0]["text"] == ANSWER
