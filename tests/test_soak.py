"""Soak, in counts: many agents at once, each aborted at a random point (or not at all), with
parallel tools. Every run keeps the event grammar and a valid transcript, and no task is left
behind. (Timings are in ``python -m bench.soak``.)"""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

from pi_core import Agent, AgentEvent, AgentToolResult, AssistantMessage, TextContent
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar, check_transcript
from support import make_tool

pytestmark = pytest.mark.anyio

AGENTS = 200
EVENTS_OF_A_FULL_RUN = 60  # an upper bound: aborts are drawn below it


async def work(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
    for step in range(params["steps"]):
        on_update(AgentToolResult([TextContent(f"step {step}")]))
        await anyio.lowlevel.checkpoint()
    return AgentToolResult([TextContent("worked")])


def scripted_agent(number: int) -> Agent:
    rng = random.Random(number)
    provider = FauxProvider(seed=number)
    calls = [
        faux_tool_call("work", {"steps": rng.randrange(1, 6)}, id=f"c{i}")
        for i in range(rng.randrange(1, 5))
    ]
    provider.set_responses(
        [
            faux_assistant_message(calls, stop_reason="toolUse"),
            faux_assistant_message("all done"),
        ]
    )
    schema = {"type": "object", "properties": {"steps": {"type": "integer"}}}
    return Agent(
        model=provider.get_model(),
        stream_fn=provider.stream,
        tools=[make_tool("work", work, parameters=schema)],
    )


async def one_run(number: int, outcomes: dict[str, int]) -> None:
    agent = scripted_agent(number)
    rng = random.Random(-number)
    abort_at = rng.randrange(EVENTS_OF_A_FULL_RUN) if rng.random() < 0.7 else None
    events: list[AgentEvent] = []

    def listener(event: AgentEvent) -> None:
        events.append(event)
        if len(events) == abort_at:
            agent.abort()

    agent.subscribe(listener)
    await agent.prompt("go")
    check_event_grammar(events)
    check_transcript(agent.state.messages)
    assert not agent.state.is_streaming
    assert agent.state.pending_tool_calls == frozenset()
    final = agent.state.messages[-1]
    if isinstance(final, AssistantMessage) and final.stop_reason == "stop":
        outcomes["completed"] += 1
    else:
        outcomes["aborted"] += 1
        if agent.state.messages[-1].role == "toolResult":  # a cut batch: it can go on
            await agent.continue_()
            check_transcript(agent.state.messages)
            outcomes["continued"] += 1


async def test_many_agents_aborted_at_random_points_keep_the_grammar() -> None:
    outcomes = {"completed": 0, "aborted": 0, "continued": 0}
    tasks_before = len(anyio.get_running_tasks())
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for number in range(AGENTS):
                group.start_soon(one_run, number, outcomes)
    assert outcomes["completed"] + outcomes["aborted"] == AGENTS
    assert all(count > 0 for count in outcomes.values()), outcomes
    assert len(anyio.get_running_tasks()) == tasks_before  # nothing left behind
