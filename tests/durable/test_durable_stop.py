"""``pi-core runs stop`` of a durable run, on SQLite and on Postgres, in real processes.

The test agent's first reply asks for two fast tools and a slow one, which runs until the test
creates a file. A stop while the slow call runs lets it finish, then ends the run before its next
request: the model is asked once. With ``--grace`` and a call that never finishes, the stop
becomes an abort when the grace is over: the call is answered ``Operation aborted``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from durable._workers import client, running_worker, runs, wait_until
from durable.durable_agents import lines
from pi_core import AssistantMessage, TextContent, ToolResultMessage

AGENTS = "durable.durable_agents:agents"


def start_and_wait_for_the_slow_call(database_url: str, directory: Path) -> str:
    params = json.dumps({"dir": str(directory)})
    started = runs(database_url, "start", "worker-test", "go", "--params", params)
    assert started.returncode == 0, started.stderr
    wait_until(lambda: "call-slow" in lines(directory, "tool_runs"), "the slow call to start")
    return started.stdout.strip()


def results(messages: Sequence[object]) -> dict[str, str]:
    """Each tool result's text, by call id."""
    return {
        m.tool_call_id: " ".join(b.text for b in m.content if isinstance(b, TextContent))
        for m in messages
        if isinstance(m, ToolResultMessage)
    }


def test_a_stop_lets_the_running_calls_finish_and_ends_before_the_next_request(
    database_url: str, tmp_path: Path
) -> None:
    with running_worker(database_url, "w1", target=AGENTS):
        run_id = start_and_wait_for_the_slow_call(database_url, tmp_path)
        stopped = runs(database_url, "stop", run_id)
        assert stopped.returncode == 0, stopped.stderr
        (tmp_path / "release").touch()
        new = client(database_url, lambda runs: runs.result(run_id))
        state = client(database_url, lambda runs: runs.status(run_id)).state
    assert state == "success"
    assert lines(tmp_path, "model_calls") == ["2"]  # no request after the stop
    assert results(new) == {"call-a": "call-a ok", "call-b": "call-b ok", "call-slow": "slow ok"}
    assert isinstance(new[-1], ToolResultMessage)


def test_a_stop_with_a_grace_aborts_what_still_runs_when_it_is_over(
    database_url: str, tmp_path: Path
) -> None:
    with running_worker(database_url, "w1", target=AGENTS):
        run_id = start_and_wait_for_the_slow_call(database_url, tmp_path)
        stopped = runs(database_url, "stop", run_id, "--grace", "0.2")
        assert stopped.returncode == 0, stopped.stderr
        new = client(database_url, lambda runs: runs.result(run_id))  # never released
    assert lines(tmp_path, "model_calls") == ["2"]
    assert results(new)["call-slow"] == "Operation aborted"
    assert not any(isinstance(m, AssistantMessage) for m in new[3:])  # system, user, reply


def test_a_negative_grace_is_a_usage_error(tmp_path: Path) -> None:
    refused = runs(f"sqlite:///{tmp_path / 'runs.sqlite'}", "stop", "some-run", "--grace", "-1")
    assert refused.returncode == 2
    assert "--grace must be a number of seconds >= 0" in refused.stderr
