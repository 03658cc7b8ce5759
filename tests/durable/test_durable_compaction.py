"""A durable run that compacts, on SQLite and on Postgres: the summary request is a step.

The agent (``durable._compacting_agents``) has a context window so small that its run compacts
between turns. The run's new messages and its compacted transcript are those of an Agent with
the same policy in this process. A worker SIGKILLed after a compaction step, while the next tool
call runs, is restarted: the recovered run does not ask for the summary again (every summary
request is counted in a file, by its digest) and ends with the messages of a run never killed.
A call held for approval makes a compacting run wait; approved, the run goes on and compacts as
the first turns did.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from durable._compacting_agents import OVERFLOW_AT, TOO_LONG, spec_of
from durable._counting_agents import counts
from durable._workers import client, running_worker, wait_until
from durable.durable_agents import lines, without_timestamps
from durable.workers import wait_for_line
from pi_core import Agent, AgentEvent, AgentMessage
from pi_core.durable import AgentSpec, DurableRuns
from pi_core.lowlevel import initial_system_message
from pi_core.testing import check_event_grammar

TARGET = "durable._compacting_agents:agents"


def plain(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    return [without_timestamps(message) for message in messages]


def as_recorded(agent: Agent, messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """An Agent's new messages as a durable run records them: the run declares the prompt and
    tools first (the Agent holds them as its transcript's leading message)."""
    leading = initial_system_message(agent.system_prompt, agent.tools)
    return plain([*([leading] if leading is not None else []), *messages])


async def finished_run(
    runs: DurableRuns, directory: Path, agent: str = "compacting"
) -> tuple[list[AgentMessage], list[AgentMessage], int]:
    """Start a run counting into ``directory`` (made already); its new messages, transcript
    and compactions."""
    run_id = await runs.start(agent, "go", params={"dir": str(directory)})
    new = await runs.result(run_id)
    return new, await runs.transcript(run_id), await runs.compactions(run_id)


def agent_of(spec: AgentSpec) -> Agent:
    """An Agent in this process with the spec's settings: the reference."""
    return Agent(
        model=spec.model,
        stream_fn=spec.stream_fn,
        tools=list(spec.tools),
        system_prompt=spec.system_prompt,
        compaction=spec.compaction,
    )


@pytest.mark.anyio
async def test_a_durable_run_compacts_as_an_agent_with_the_same_policy_does(
    database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "reference").mkdir()
    agent = agent_of(spec_of(tmp_path / "reference"))
    reference = await agent.prompt("go")
    assert agent.state.compactions >= 1

    with running_worker(database_url, "compacting-worker", target=TARGET) as worker:
        (tmp_path / "run").mkdir()
        async with DurableRuns(database_url) as runs:
            new, transcript, compactions = await finished_run(runs, tmp_path / "run")
        worker.wait_for("Compacted the conversation")  # the worker's log shows it

    assert compactions == agent.state.compactions
    assert plain(new) == as_recorded(agent, reference.messages)
    assert plain(transcript) == plain(agent.state.messages)
    assert len(transcript) < len(new)  # the older part is a summary now
    summaries = lines(tmp_path / "run", "summary")
    assert len(summaries) == compactions == len(set(summaries))
    assert counts(tmp_path / "run") == counts(tmp_path / "reference")


def test_a_run_recovered_after_its_compaction_step_does_not_ask_for_the_summary_again(
    database_url: str, tmp_path: Path
) -> None:
    directory = tmp_path / "killed"
    directory.mkdir()
    params = {"dir": str(directory)}
    with running_worker(database_url, "doomed", stall=True, target=TARGET) as doomed:
        run_id = client(database_url, lambda runs: runs.start("compacting", "go", params=params))
        # The slow call comes after the compaction: its step's outcome is recorded by then.
        client(database_url, lambda _: wait_for_line(directory, "slow", "x"))
        asked_before_the_kill = lines(directory, "summary")
        doomed.process.kill()  # SIGKILL while the slow call runs, after the compaction
        doomed.finish()
    assert len(asked_before_the_kill) >= 1

    with running_worker(database_url, "doomed", target=TARGET):  # recovers its runs
        new = client(database_url, lambda runs: runs.result(run_id))
        transcript = client(database_url, lambda runs: runs.transcript(run_id))
        compactions = client(database_url, lambda runs: runs.compactions(run_id))
        (tmp_path / "reference").mkdir()
        reference = client(database_url, lambda runs: finished_run(runs, tmp_path / "reference"))

    summaries = lines(directory, "summary")
    assert summaries[: len(asked_before_the_kill)] == asked_before_the_kill
    assert len(summaries) == compactions == len(set(summaries))  # none asked twice
    assert lines(directory, "slow") == ["x", "x"]  # the call in flight ran again
    assert plain(new) == plain(reference[0])
    assert plain(transcript) == plain(reference[1])
    assert compactions == reference[2]


@pytest.mark.anyio
async def test_a_request_refused_as_too_long_is_compacted_and_retried_once(
    database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "reference").mkdir()
    agent = agent_of(spec_of(tmp_path / "reference", overflow_at=OVERFLOW_AT))
    reference = await agent.prompt("go")
    assert agent.state.compactions == 1
    assert not any(getattr(m, "error_message", None) == TOO_LONG for m in reference.messages)

    with running_worker(database_url, "overflowing-worker", target=TARGET):
        (tmp_path / "run").mkdir()
        async with DurableRuns(database_url) as runs:
            run_id = await runs.start("overflowing", "go", params={"dir": str(tmp_path / "run")})
            new = await runs.result(run_id)
            transcript = await runs.transcript(run_id)
            events = [event.type async for _, event in runs.events(run_id)]
            assert await runs.compactions(run_id) == 1

    assert plain(new) == as_recorded(
        agent, reference.messages
    )  # the refused reply is not among them
    assert plain(transcript) == plain(agent.state.messages)
    assert events.count("agent_start") == events.count("agent_end") == 1
    assert counts(tmp_path / "run") == counts(tmp_path / "reference")


@pytest.mark.anyio
async def test_a_request_refused_again_after_the_compaction_ends_the_run(
    database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "reference").mkdir()
    agent = agent_of(spec_of(tmp_path / "reference", overflow_at=2))
    reference = await agent.prompt("go")
    assert "still too long" in (agent.state.error_message or "")

    params = {"dir": str(tmp_path / "run"), "overflow_at": 2}
    with running_worker(database_url, "overflowing-worker", target=TARGET) as worker:
        (tmp_path / "run").mkdir()
        async with DurableRuns(database_url) as runs:
            run_id = await runs.start("overflowing", "go", params=params)
            new = await runs.result(run_id)
            events = [event.type async for _, event in runs.events(run_id)]
        worker.wait_for("The context is still too long for the model after compacting")

    assert plain(new) == as_recorded(agent, reference.messages)
    assert getattr(new[-1], "error_message", None) == TOO_LONG
    assert events.count("agent_start") == events.count("agent_end") == 1
    assert len(lines(tmp_path / "run", "summary")) == 1  # one retry, one compaction


def test_a_held_call_of_a_compacting_run_waits_and_the_run_goes_on_compacting(
    database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "reference").mkdir()
    agent = agent_of(spec_of(tmp_path / "reference"))  # the same run, its slow call unheld
    reference = anyio.run(agent.prompt, "go")
    assert agent.state.compactions >= 1

    directory = tmp_path / "run"
    directory.mkdir()
    params = {"dir": str(directory), "approve_slow": True}
    with running_worker(database_url, "compacting-worker", target=TARGET):
        run_id = client(database_url, lambda runs: runs.start("compacting", "go", params=params))

        def waiting() -> list[str]:
            listed = client(database_url, lambda runs: runs.pending(run_id))
            return [call.tool_call_id for call in listed]

        wait_until(lambda: waiting() == ["slow-1"], "the slow call to wait")
        assert lines(directory, "summary")  # it compacted before the call was held
        assert "slow" not in counts(directory)
        client(database_url, lambda runs: runs.approve(run_id, "slow-1"))
        new = client(database_url, lambda runs: runs.result(run_id))
        transcript = client(database_url, lambda runs: runs.transcript(run_id))
        compactions = client(database_url, lambda runs: runs.compactions(run_id))
        events = client(database_url, lambda runs: _events(runs, run_id))

    assert plain(new) == as_recorded(agent, reference.messages)
    assert plain(transcript) == plain(agent.state.messages)
    assert compactions == agent.state.compactions
    check_event_grammar(events, allow_held=True)
    kinds = [event.type for event in events]
    assert kinds.count("agent_start") == kinds.count("agent_end") == 1
    assert counts(directory) == counts(tmp_path / "reference")


async def _events(runs: DurableRuns, run_id: str) -> list[AgentEvent]:
    return [event async for _, event in runs.events(run_id)]
