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
from durable._workers import (
    LiveCli,
    running_worker,
    runs,
    start_counting_run,
    stop,
    wait_until,
    worker_env,
)
from durable.durable_agents import lines
from json_events import load_events
from pi_core import AgentMessage, MessageEnd, TextContent, ToolExecutionEnd
from pi_core.serialization import loads

FINISHED_BEFORE_THE_KILL = {"model": 2, "mark-a": 1, "mark-b": 1, "slow": 1}
AFTER_THE_RESTART = {"model": 3, "mark-a": 1, "mark-b": 1, "slow": 2}


def test_a_run_finishes_after_its_worker_is_killed_and_restarted(
    postgres_url: str, tmp_path: Path
) -> None:
    database_url = postgres_url
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", stall=True) as first:
        run_id = start_counting_run(database_url, work)
        # Its line, not just its file: the file exists a moment before the line is written.
        wait_until(lambda: bool(lines(work, "slow")), "the slow tool to start")
        first.process.kill()  # SIGKILL: no chance to clean up
    assert counts(work) == FINISHED_BEFORE_THE_KILL

    with running_worker(database_url, "w1") as second:
        followed = runs(database_url, "events", run_id, "--json")
        stop(second)
    assert followed.returncode == 0, followed.stderr
    assert counts(work) == AFTER_THE_RESTART
    events = load_events(followed.stdout.splitlines())
    ended = [event.tool_name for event in events if isinstance(event, ToolExecutionEnd)]
    assert sorted(ended) == ["mark", "mark", "slow"]  # each delivered once, across the crash
    assert [event.type for event in events].count("agent_end") == 1

    status = json.loads(runs(database_url, "status", run_id, "--json").stdout)
    assert status["state"] == "success" and status["agent"] == "counting"
    result = runs(database_url, "result", run_id, "--json").stdout.splitlines()
    messages = [loads(line, AgentMessage) for line in result]
    assert messages[-1].content == [TextContent(ANSWER)]
    # The recovered run's recorded events agree with its transcript, field for field.
    assert [event.message for event in events if isinstance(event, MessageEnd)] == messages


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

        aborted.mkdir()
        params = json.dumps({"dir": str(aborted)})
        start = ["runs", "start", "counting", "go", "--params", params, "--follow"]
        with LiveCli(*start, "--db", database_url, env=worker_env(), merge_stderr=True) as followed:
            run_id = followed.wait_for("run ").split()[-1]  # the id, on stderr, comes first
            wait_until((aborted / "slow").exists, "the slow tool to start")
            assert runs(database_url, "abort", run_id).returncode == 0
            assert followed.finish() == 130  # soft abort: closed out like an in-process abort
        stop(worker)
    assert "✓ mark: mark a set" in followed.output
    assert "✗ slow: Operation aborted" in followed.output
    assert "aborted · 2 turns · 3 tool calls" in followed.output


def test_a_cancelled_and_resumed_run_is_one_info_line_of_the_worker_log(
    postgres_url: str, tmp_path: Path
) -> None:
    database_url = postgres_url
    args = ["worker", "durable.durable_agents:agents", "--db", database_url, "--executor-id", "w1"]
    with LiveCli(*args, env=worker_env(), merge_stderr=True) as worker:
        worker.wait_for("serving durable.durable_agents:agents")
        params = json.dumps({"dir": str(tmp_path)})
        run_id = runs(database_url, "start", "worker-test", "go", "--params", params).stdout.strip()
        wait_until(lambda: "call-slow" in lines(tmp_path, "tool_runs"), "the slow tool to start")
        assert runs(database_url, "cancel", run_id).returncode == 0
        (tmp_path / "release").touch()  # the cancelled execution goes on to its next step
        assert runs(database_url, "resume", run_id).returncode == 0
        assert runs(database_url, "result", run_id).returncode == 0
        stop(worker)
    said = [line for line in worker.lines if run_id in line]
    assert len(said) == 1, worker.output
    assert f"INFO pi_core.durable: run {run_id} was resumed" in said[0]
    assert "Traceback" not in worker.output and "ERROR" not in worker.output
