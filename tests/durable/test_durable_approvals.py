"""Calls held by ``requires_approval`` in a durable run, and a durable run's deadline, on SQLite
and on Postgres.

A held call makes the run wait, not end: ``runs status`` says ``waiting``, ``runs pending``
lists the call with its reason, and a decision given from another process (the CLI) lets the
run go on, as one run (one ``agent_start``, one ``agent_end``). Approved, the call runs once,
even when the worker was SIGKILLed while it waited; denied, or undecided past the
``approval_timeout``, it never runs. A deadline is recorded when the run starts: a run recovered
after its deadline has passed is aborted, not given a fresh deadline. Every execution of a tool
is a line in a file, so the tests count what really ran, across processes. Every command is a
real ``pi-core`` process: these tests need no event-loop backend.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbos import DBOSClient

from durable._approving_agents import SEND_CALL, SEND_REASON, SLOW_CALL, TARGET
from durable._counting_agents import counts
from durable._workers import client, running_worker, runs, wait_until
from durable.durable_agents import lines
from json_events import load_events
from pi_core import AgentEvent, AssistantMessage, TextContent, ToolExecutionEnd, ToolResultMessage
from pi_core.lowlevel import now_ms
from pi_core.testing import check_event_grammar, check_transcript

DEADLINE = 6.0
"""Seconds: long enough for a loaded machine to reach the stalled call and kill its worker."""


def start(database_url: str, agent: str, directory: Path, **params: Any) -> str:
    directory.mkdir()
    params = {"dir": str(directory), **params}
    return client(database_url, lambda runs: runs.start(agent, "go", params=params))


def status(database_url: str, run_id: str) -> str:
    return client(database_url, lambda runs: runs.status(run_id)).state


def pending(database_url: str, run_id: str) -> list[dict[str, Any]]:
    listed = runs(database_url, "pending", run_id, "--json")
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def wait_for_the_send(database_url: str, run_id: str) -> None:
    """Wait until the run says it waits and lists the held call.

    Right after a restart, a run that the record says is waiting has been seen (on Postgres,
    rarely) to list no call for a moment: so the list is waited for too.
    """
    expected = [
        {
            "tool_call_id": SEND_CALL,
            "tool_name": "send",
            "args": {"amount": 5, "to": "bob"},
            "reason": SEND_REASON,
        }
    ]
    wait_until(lambda: status(database_url, run_id) == "waiting", "the run to wait")
    wait_until(lambda: pending(database_url, run_id) == expected, "the held call to show")


def events_of(database_url: str, run_id: str, *, exit_code: int = 0) -> list[AgentEvent]:
    """The run's events, from another process: one well-formed run (``exit_code`` 130: an
    aborted one)."""
    events = runs(database_url, "events", run_id, "--json")
    assert events.returncode == exit_code, events.stderr
    loaded = load_events(events.stdout.splitlines())
    check_event_grammar(loaded, allow_held=True)
    kinds = [event.type for event in loaded]
    assert kinds.count("agent_start") == kinds.count("agent_end") == 1
    return loaded


def final_answer(database_url: str, run_id: str) -> str:
    """The run's last reply, once it ended; its transcript and events checked on the way."""
    new = client(database_url, lambda runs: runs.result(run_id))
    check_transcript(new, allow_held=True)
    ended = [
        e.tool_call_id for e in events_of(database_url, run_id) if isinstance(e, ToolExecutionEnd)
    ]
    assert sorted(ended) == ["mark-1", SEND_CALL]  # each call answered once, across the kills
    last = new[-1]
    assert isinstance(last, AssistantMessage)
    [text] = [block.text for block in last.content if isinstance(block, TextContent)]
    return text


def test_a_held_call_waits_and_runs_once_when_approved_from_the_shell(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", target=TARGET):
        run_id = start(database_url, "sending", work)
        wait_for_the_send(database_url, run_id)
        assert counts(work) == {"model": 1, "mark": 1}  # the held call has not run
        approved = runs(database_url, "approve", run_id, SEND_CALL)
        assert approved.returncode == 0, approved.stderr
        assert final_answer(database_url, run_id) == "send: sent 5 to bob"
        again = runs(database_url, "approve", run_id, SEND_CALL)
    assert counts(work) == {"model": 2, "mark": 1, "send": 1}
    assert again.returncode != 0
    assert f"has no tool call '{SEND_CALL}' waiting for a decision" in again.stderr


def test_a_denied_call_is_answered_and_never_runs(database_url: str, tmp_path: Path) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", target=TARGET):
        run_id = start(database_url, "sending", work)
        wait_for_the_send(database_url, run_id)
        denied = runs(database_url, "deny", run_id, SEND_CALL, "--reason", "not today")
        assert denied.returncode == 0, denied.stderr
        assert final_answer(database_url, run_id) == "send: Tool call denied: not today (error)"
    assert counts(work) == {"model": 2, "mark": 1}


def test_a_worker_killed_while_a_call_waits_runs_it_once_when_approved_after_the_restart(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", target=TARGET) as waiting:
        run_id = start(database_url, "sending", work)
        wait_for_the_send(database_url, run_id)
        waiting.process.kill()
    assert status(database_url, run_id) == "waiting"  # the record still says so
    assert len(pending(database_url, run_id)) == 1  # and lists the call while no worker runs
    with running_worker(database_url, "w1", target=TARGET):
        wait_for_the_send(database_url, run_id)
        assert runs(database_url, "approve", run_id, SEND_CALL).returncode == 0
        assert final_answer(database_url, run_id) == "send: sent 5 to bob"
    # The first reply was not asked for again, and the approved call ran exactly once.
    assert counts(work) == {"model": 2, "mark": 1, "send": 1}


def test_a_held_call_nobody_decides_is_denied_after_the_approval_timeout(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", target=TARGET):
        run_id = start(database_url, "sending", work, approval_timeout=1)
        assert final_answer(database_url, run_id) == (
            "send: Tool call denied: Approval timed out (error)"
        )
    assert counts(work) == {"model": 2, "mark": 1}


def test_a_turn_limit_counts_the_replies_before_the_wait(database_url: str, tmp_path: Path) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", target=TARGET):
        run_id = start(database_url, "sending", work, max_turns=1)
        wait_for_the_send(database_url, run_id)
        assert runs(database_url, "approve", run_id, SEND_CALL).returncode == 0
        new = client(database_url, lambda runs: runs.result(run_id))
    # The one request allowed was made before the wait: the approved call runs, then the run ends.
    assert counts(work) == {"model": 1, "mark": 1, "send": 1}
    assert [m.role for m in new] == ["system", "user", "assistant", "toolResult", "toolResult"]
    events_of(database_url, run_id)


def recorded_deadline(database_url: str, run_id: str) -> int | None:
    """The end of the run's deadline as its step recorded it (ms), once recorded."""
    dbos = DBOSClient(system_database_url=database_url)
    try:
        steps = dbos.list_workflow_steps(run_id)
    finally:
        dbos.destroy()
    found = [step["output"] for step in steps if step["function_name"] == "run deadline"]
    return found[0] if found else None


def the_slow_result(new: list[Any]) -> ToolResultMessage:
    [result] = [m for m in new if isinstance(m, ToolResultMessage)]
    assert result.tool_call_id == SLOW_CALL
    return result


def test_a_deadline_aborts_the_running_call(database_url: str, tmp_path: Path) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", stall=True, target=TARGET):
        # The call stalls for ever: the deadline, long enough for a loaded machine to reach it
        # (1 s was not, once under CI), is what ends it.
        run_id = start(database_url, "deadlined", work, deadline=DEADLINE)
        new = client(database_url, lambda runs: runs.result(run_id))
    result = the_slow_result(new)
    assert result.is_error and [b.text for b in result.content] == ["Operation aborted"]  # type: ignore[union-attr]
    assert counts(work) == {"model": 1, "slow": 1}  # no request after the abort
    events_of(database_url, run_id, exit_code=130)


def test_a_run_recovered_after_its_deadline_keeps_the_deadline_of_its_first_start(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    with running_worker(database_url, "w1", stall=True, target=TARGET) as worker:
        run_id = start(database_url, "deadlined", work, deadline=DEADLINE)
        wait_until(lambda: bool(lines(work, "slow")), "the slow call to start")
        worker.process.kill()
    ends = recorded_deadline(database_url, run_id)
    assert ends is not None
    assert now_ms() < ends, "the machine took the whole deadline to reach the call"
    wait_until(lambda: now_ms() > ends, "the deadline to pass")
    with running_worker(database_url, "w1", target=TARGET):
        new = client(database_url, lambda runs: runs.result(run_id))
    result = the_slow_result(new)
    # A fresh deadline would have let the call run again, to "done", and the model answer.
    assert result.is_error and [b.text for b in result.content] == ["Operation aborted"]  # type: ignore[union-attr]
    assert counts(work) == {"model": 1, "slow": 1}
