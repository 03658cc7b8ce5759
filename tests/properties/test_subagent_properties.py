"""Properties of sub-agents over random child scripts: event order, and abort at any point.

Each child's tool calls yield to the event loop a drawn number of times, so the children finish
their steps in random orders; an abort lands at a drawn event index of the parent's stream
(forwarded child events included), never after a sleep.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_core import (
    Agent,
    AgentEvent,
    AgentTool,
    SubagentEvent,
    ToolExecutionUpdate,
    agent_tool,
    tool,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar, check_transcript

pytestmark = pytest.mark.anyio

PROPERTY = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
BOUND = 20.0

# A child's script: per turn, the checkpoint counts of its tool calls (one per call).
turns = st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=3), max_size=3)
child_scripts = st.lists(turns, min_size=2, max_size=3)


class Tree:
    """A parent whose one reply starts one child per script, each child running ``work``
    calls; it records every child it built and counts the tool calls still running."""

    def __init__(self, scripts: list[list[list[int]]], nested: bool = False) -> None:
        self.scripts = scripts
        self.nested = nested
        self.children: list[tuple[Agent, list[AgentEvent]]] = []
        self.running = 0
        self.parent_events: list[AgentEvent] = []

    def work_tool(self) -> AgentTool:
        @tool
        async def work(spins: int) -> str:
            """Yield to the event loop ``spins`` times."""
            self.running += 1
            try:
                for _ in range(spins):
                    await anyio.lowlevel.checkpoint()
            finally:
                self.running -= 1
            return f"spun {spins}"

        return work

    def child(self, script: list[list[int]], depth: int) -> Agent:
        provider = FauxProvider(seed=1)
        replies: list[Any] = []
        tools: list[AgentTool] = [self.work_tool()]
        for turn, spins in enumerate(script):
            names: list[tuple[str, dict[str, Any]]] = [("work", {"spins": n}) for n in spins]
            if self.nested and depth == 1 and turn == 0:
                names.append(("inner", {"task": "deeper"}))
            calls = [
                faux_tool_call(n, a, id=f"d{depth}t{turn}c{i}") for i, (n, a) in enumerate(names)
            ]
            replies.append(faux_assistant_message(calls, stop_reason="toolUse"))
        replies.append(faux_assistant_message(f"child at depth {depth} done"))
        provider.set_responses(replies)
        if self.nested and depth == 1:
            tools.append(
                agent_tool(lambda _a: self.child(script, depth + 1), name="inner", description="d")
            )
        agent = Agent(model=provider.get_model(), stream_fn=provider.stream, tools=tools)
        events: list[AgentEvent] = []
        agent.subscribe(events.append)
        self.children.append((agent, events))
        return agent

    def parent(self) -> Agent:
        scripts = iter(self.scripts)
        research = agent_tool(
            lambda _a: self.child(next(scripts), 1), name="research", description="d"
        )
        provider = FauxProvider(seed=1)
        calls = [
            faux_tool_call("research", {"task": f"part {i}"}, id=f"r{i}")
            for i in range(len(self.scripts))
        ]
        provider.set_responses(
            [
                faux_assistant_message(calls, stop_reason="toolUse"),
                faux_assistant_message("all done"),
            ]
        )
        agent = Agent(model=provider.get_model(), stream_fn=provider.stream, tools=[research])
        agent.subscribe(self.parent_events.append)
        return agent


def forwarded_by_call(events: list[AgentEvent]) -> dict[str, list[SubagentEvent]]:
    found: dict[str, list[SubagentEvent]] = {}
    for event in events:
        if isinstance(event, ToolExecutionUpdate):
            details = event.partial_result.details
            if isinstance(details, SubagentEvent):
                found.setdefault(event.tool_call_id, []).append(details)
    return found


@PROPERTY
@given(scripts=child_scripts)
async def test_parallel_children_interleave_and_each_keeps_its_own_order(
    scripts: list[list[list[int]]],
) -> None:
    tree = Tree(scripts)
    parent = tree.parent()
    with anyio.fail_after(BOUND):
        result = await parent.prompt("go")
    assert result.ok
    check_event_grammar(tree.parent_events)
    check_transcript(parent.state.messages)
    forwarded = forwarded_by_call(tree.parent_events)
    assert len(forwarded) == len(scripts) == len(tree.children)
    own_orders = [events for _, events in tree.children]
    # Each call's forwarded events are exactly one child's own events, in its order.
    for sequence in forwarded.values():
        assert {event.path for event in sequence} == {("research",)}
        seen = [event.event for event in sequence]
        assert any(
            len(seen) == len(own) and all(a is b for a, b in zip(seen, own, strict=True))
            for own in own_orders
        )
        check_event_grammar(seen)
    assert tree.running == 0


@PROPERTY
@given(scripts=child_scripts, abort_at=st.integers(0, 200), nested=st.booleans())
async def test_an_abort_anywhere_answers_every_call_at_every_depth_once(
    scripts: list[list[list[int]]], abort_at: int, nested: bool
) -> None:
    tree = Tree(scripts, nested=nested)
    parent = tree.parent()

    def abort_at_index(_event: AgentEvent) -> None:
        if len(tree.parent_events) == abort_at + 1:
            parent.abort()

    parent.subscribe(abort_at_index)
    with anyio.fail_after(BOUND):
        await parent.prompt("go")
    check_event_grammar(tree.parent_events)
    check_transcript(parent.state.messages)
    for child, events in tree.children:
        assert not child.state.is_streaming
        if not events:  # built, but the abort came before its run began
            assert all(m.role == "system" for m in child.state.messages)  # its seed alone
            continue
        check_event_grammar(events)
        check_transcript(child.state.messages)
    assert tree.running == 0
