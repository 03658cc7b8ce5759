"""A ``replay="never"`` tool whose worker is killed mid-call, on SQLite and on Postgres.

The call is in doubt after the kill: the restarted worker asks ``reconcile``. When it finds the
payment, that is the call's result; when it does not, the run waits (``runs status`` says
``waiting``, ``runs pending`` lists the call) until a person decides, from another process:
approved, the payment runs once more; denied, never. A worker killed while the call waits loses
nothing, and a wait with ``approval_timeout`` ends denied. Every execution of a tool is a line
in a file, so the test counts what really ran, across processes. Every command is a real
``pi-core`` process: these tests need no event-loop backend.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbos import DBOSClient

from durable._counting_agents import counts
from durable._paying_agents import PAY_CALL, TARGET
from durable._workers import client, running_worker, runs, wait_until
from durable.durable_agents import lines
from json_events import load_events
from pi_core import AssistantMessage, TextContent, ToolExecutionEnd
from pi_core.durable._dbos_approvals import INTERRUPTED
from pi_core.testing import check_event_grammar


def start_payment(database_url: str, directory: Path, **params: Any) -> str:
    directory.mkdir()
    params = {"dir": str(directory), **params}
    return client(database_url, lambda runs: runs.start("paying", "pay", params=params))


def recorded_steps(database_url: str, run_id: str) -> list[str]:
    """The names of the run's steps whose outcome is recorded."""
    client = DBOSClient(system_database_url=database_url)
    try:
        steps = client.list_workflow_steps(run_id)
    finally:
        client.destroy()
    return [step["function_name"] for step in steps if step["completed_at_epoch_ms"] is not None]


def kill_mid_payment(database_url: str, directory: Path, **params: Any) -> str:
    """Start a payment on a worker that stalls it, and SIGKILL the worker mid-call (once the
    safe ``mark`` beside it is recorded, so that only the payment is in flight)."""
    with running_worker(database_url, "w1", stall=True, target=TARGET) as worker:
        run_id = start_payment(database_url, directory, **params)
        wait_until(
            lambda: "tool mark" in recorded_steps(database_url, run_id), "the mark's outcome"
        )
        # Its line, not just its file: the file exists a moment before the line is written.
        wait_until(lambda: bool(lines(directory, "pay")), "the payment to start")
        if params.get("effect_before_stall"):
            wait_until(lambda: PAY_CALL in lines(directory, "ledger"), "the payment's effect")
        worker.process.kill()
    assert counts(directory) == {"model": 1, "mark": 1, "pay": 1, **_ledger(params)}
    return run_id


def _ledger(params: dict[str, Any]) -> dict[str, int]:
    return {"ledger": 1} if params.get("effect_before_stall") else {}


def status(database_url: str, run_id: str) -> str:
    return client(database_url, lambda runs: runs.status(run_id)).state


def pending(database_url: str, run_id: str) -> list[dict[str, Any]]:
    listed = runs(database_url, "pending", run_id, "--json")
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def wait_for_the_decision(database_url: str, run_id: str) -> None:
    """Wait until the run waits for the payment's decision, and says so.

    After a restart the record still says "waiting" from before the kill, while the recovered
    run has not yet published its waiting calls again: so the waiting calls are waited for too.
    """
    expected = [
        {"tool_call_id": PAY_CALL, "tool_name": "pay", "args": {"amount": 5}, "reason": INTERRUPTED}
    ]
    wait_until(lambda: status(database_url, run_id) == "waiting", "the run to wait")
    listed: list[list[dict[str, Any]]] = []

    def shown() -> bool:
        listed.append(pending(database_url, run_id))
        return listed[-1] == expected

    try:
        wait_until(shown, "the waiting call to show")
    except AssertionError as failure:  # say what was listed, and how the run fared
        fared = engine_status(database_url, run_id)
        raise AssertionError(f"{failure}; listed: {listed[-3:]}; {fared}") from None


def engine_status(database_url: str, run_id: str) -> str:
    """The run's state in the engine, with its error (a replay that failed says why here)."""
    client = DBOSClient(system_database_url=database_url)
    try:
        status = client.retrieve_workflow(run_id).get_status()
    finally:
        client.destroy()
    return f"the engine says {status.status}" + (f": {status.error}" if status.error else "")


def final_answer(database_url: str, run_id: str) -> str:
    """The run's last reply, once it ended; its events checked on the way."""
    new = client(database_url, lambda runs: runs.result(run_id))
    events = runs(database_url, "events", run_id, "--json")
    assert events.returncode == 0, events.stderr
    loaded = load_events(events.stdout.splitlines())
    check_event_grammar(loaded)
    ended = [e.tool_call_id for e in loaded if isinstance(e, ToolExecutionEnd)]
    assert sorted(ended) == ["mark-1", PAY_CALL]  # each call answered once, across the kills
    last = new[-1]
    assert isinstance(last, AssistantMessage)
    [text] = [block.text for block in last.content if isinstance(block, TextContent)]
    return text


def test_a_payment_that_took_effect_is_reconciled(database_url: str, tmp_path: Path) -> None:
    work = tmp_path / "counts"
    run_id = kill_mid_payment(database_url, work, reconcile=True, effect_before_stall=True)
    with running_worker(database_url, "w1", target=TARGET):
        assert final_answer(database_url, run_id) == ("payment: paid 5 (found in the ledger)")
    # Paid once; reconcile asked once; the model not asked again for the first reply.
    assert counts(work) == {"model": 2, "mark": 1, "pay": 1, "ledger": 1, "reconciled": 1}


def test_a_payment_in_doubt_waits_and_runs_once_when_approved_from_the_shell(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    run_id = kill_mid_payment(database_url, work, reconcile=True)
    with running_worker(database_url, "w1", target=TARGET):
        wait_for_the_decision(database_url, run_id)
        assert lines(work, "reconciled") == [PAY_CALL]
        assert counts(work)["pay"] == 1  # not run again before the decision
        approved = runs(database_url, "approve", run_id, PAY_CALL)
        assert approved.returncode == 0, approved.stderr
        assert final_answer(database_url, run_id) == "payment: paid 5"
        again = runs(database_url, "approve", run_id, PAY_CALL)
    assert counts(work) == {"model": 2, "mark": 1, "pay": 2, "ledger": 1, "reconciled": 1}
    assert again.returncode != 0
    assert f"has no tool call '{PAY_CALL}' waiting for a decision" in again.stderr


def test_a_worker_killed_while_a_call_waits_loses_nothing(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    run_id = kill_mid_payment(database_url, work)  # no reconcile: in doubt at once
    with running_worker(database_url, "w1", target=TARGET) as waiting:
        wait_for_the_decision(database_url, run_id)
        waiting.process.kill()
    assert status(database_url, run_id) == "waiting"  # the record still says so
    with running_worker(database_url, "w1", target=TARGET):
        wait_for_the_decision(database_url, run_id)
        assert runs(database_url, "approve", run_id, PAY_CALL).returncode == 0
        assert final_answer(database_url, run_id) == "payment: paid 5"
    assert counts(work) == {"model": 2, "mark": 1, "pay": 2, "ledger": 1}


def test_a_denied_payment_is_answered_and_never_runs_again(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    run_id = kill_mid_payment(database_url, work)
    with running_worker(database_url, "w1", target=TARGET):
        wait_for_the_decision(database_url, run_id)
        denied = runs(database_url, "deny", run_id, PAY_CALL, "--reason", "not today")
        assert denied.returncode == 0, denied.stderr
        assert final_answer(database_url, run_id) == (
            "payment: Tool call denied: not today (error)"
        )
    assert counts(work) == {"model": 2, "mark": 1, "pay": 1}


def test_a_call_nobody_decides_is_denied_after_the_approval_timeout(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    run_id = kill_mid_payment(database_url, work, approval_timeout=1)
    with running_worker(database_url, "w1", target=TARGET):
        assert final_answer(database_url, run_id) == (
            "payment: Tool call denied: Approval timed out (error)"
        )
    assert counts(work) == {"model": 2, "mark": 1, "pay": 1}


def test_a_stop_while_a_call_waits_ends_the_run_after_the_decision(
    database_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "counts"
    run_id = kill_mid_payment(database_url, work)
    with running_worker(database_url, "w1", target=TARGET):
        wait_for_the_decision(database_url, run_id)
        assert runs(database_url, "stop", run_id).returncode == 0
        assert runs(database_url, "deny", run_id, PAY_CALL).returncode == 0
        new = client(database_url, lambda runs: runs.result(run_id))
    assert counts(work) == {"model": 1, "mark": 1, "pay": 1}  # no request after the stop
    assert [m.role for m in new] == ["system", "user", "assistant", "toolResult", "toolResult"]
