"""Sub-agents under run control: a stop of the parent and the parent's limits reach the child."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from pi_core import (
    Agent,
    AgentTool,
    LimitReached,
    RunLimits,
    RunOutcome,
    ToolCall,
    ToolResultMessage,
    Usage,
    UsageCost,
    agent_tool,
    tool,
)
from pi_core.testing import ScriptedStream, check_event_grammar, check_transcript, scripted_reply

pytestmark = pytest.mark.anyio

BOUND = 10.0


def spending(dollars: float) -> Usage:
    return Usage(10, 10, 0, 0, 20, UsageCost(dollars / 2, dollars / 2, 0, 0, dollars))


def reply(*calls: ToolCall, text: str = "", dollars: float = 0.0) -> Any:
    message = scripted_reply(*calls) if calls else scripted_reply(text or "done")
    message.usage = spending(dollars)
    return message


@tool
async def work() -> str:
    """Do a little work."""
    return "worked"


class Family:
    """A parent whose first reply starts ``children`` research calls; each child runs on its
    own scripted model, with the ``work`` tool (or ``child_tools``)."""

    def __init__(
        self,
        child_replies: list[Any] | None = None,
        *,
        child_default: Any = None,
        children: int = 1,
        child_tools: list[AgentTool] | None = None,
        share_limits: bool = True,
        limits: RunLimits | None = None,
    ) -> None:
        self.child_streams: list[ScriptedStream] = []
        self.children: list[Agent] = []
        self.child_events: list[list[Any]] = []
        self._child_replies = child_replies or []
        self._child_default = child_default
        self._child_tools = child_tools or [work]
        calls = [ToolCall(f"r{i}", "research", {"task": f"part {i}"}) for i in range(children)]
        self.stream = ScriptedStream([reply(*calls, dollars=0.01), reply(text="all done")])
        research = agent_tool(
            self._child, name="research", description="d", share_limits=share_limits
        )
        self.parent = Agent(
            model=self.stream.model, stream_fn=self.stream, tools=[research], limits=limits
        )
        self.events: list[Any] = []
        self.parent.subscribe(self.events.append)

    def _child(self, _args: dict[str, Any]) -> Agent:
        stream = ScriptedStream(list(self._child_replies), default=self._child_default)
        child = Agent(model=stream.model, stream_fn=stream, tools=self._child_tools)
        events: list[Any] = []
        child.subscribe(events.append)
        self.child_streams.append(stream)
        self.children.append(child)
        self.child_events.append(events)
        return child

    def check_well_formed(self) -> None:
        check_event_grammar(self.events)
        check_transcript(self.parent.messages)
        for child, events in zip(self.children, self.child_events, strict=True):
            check_event_grammar(events)
            check_transcript(child.messages)


@pytest.mark.parametrize("share_limits", [True, False])
async def test_a_childs_turns_count_against_the_parents_limit_when_shared(
    share_limits: bool,
) -> None:
    child_script = [reply(ToolCall("w1", "work", {})), reply(ToolCall("w2", "work", {})), reply()]
    family = Family(child_script, share_limits=share_limits, limits=RunLimits(max_turns=3))
    with anyio.fail_after(BOUND):
        result = await family.parent.prompt("go")
    family.check_well_formed()
    [child_stream] = family.child_streams
    if share_limits:
        # The child's three replies reached the parent's limit of three turns: the child ended
        # after its third (its last anyway), then the parent, before its second request.
        assert child_stream.calls == 3
        assert family.stream.calls == 1
        assert result.outcome is RunOutcome.LIMIT
        assert result.stopped_by == LimitReached("max_turns", 3, 3)
        assert isinstance(family.parent.messages[-1], ToolResultMessage)
    else:
        assert child_stream.calls == 3
        assert family.stream.calls == 2
        assert result.outcome is RunOutcome.DONE and result.stopped_by is None


async def test_a_cost_limit_shared_by_two_children_in_parallel_stops_the_tree() -> None:
    endless_work = reply(ToolCall("w", "work", {}), dollars=0.1)
    family = Family(child_default=endless_work, children=2, limits=RunLimits(max_cost=0.25))
    with anyio.fail_after(BOUND):
        result = await family.parent.prompt("go")
    family.check_well_formed()
    assert result.outcome is RunOutcome.LIMIT
    assert result.stopped_by is not None and result.stopped_by.kind == "max_cost"
    assert family.stream.calls == 1  # the parent made no request after its batch
    # The third reply of the children reached the limit; each child finished at most the turn
    # it was in.
    assert 3 <= sum(stream.calls for stream in family.child_streams) <= 4
    for child in family.children:
        assert isinstance(child.messages[-1], ToolResultMessage)  # its last turn was finished
    answers = [m for m in family.parent.messages if isinstance(m, ToolResultMessage)]
    assert [m.is_error for m in answers] == [False, False]


class Gate:
    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    def tool(self) -> AgentTool:
        @tool
        async def slow() -> str:
            """Wait for the gate."""
            self.entered.set()
            await self.release.wait()
            return "slow done"

        return slow


async def test_a_stop_of_the_parent_lets_the_child_finish_its_turn_then_ends_both() -> None:
    gate = Gate()
    family = Family(child_default=reply(ToolCall("s", "slow", {})), child_tools=[gate.tool()])
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:

            async def stop_then_release() -> None:
                await gate.entered.wait()
                family.parent.stop()
                gate.release.set()

            tg.start_soon(stop_then_release)
            result = await family.parent.prompt("go")
    family.check_well_formed()
    [child] = family.children
    [child_stream] = family.child_streams
    assert child_stream.calls == 1  # the child's running turn finished; no next request
    assert isinstance(child.messages[-1], ToolResultMessage)
    assert child.messages[-1].content[0].text == "slow done"  # type: ignore[union-attr]
    assert family.stream.calls == 1
    assert result.ok and result.outcome is RunOutcome.DONE
    [answer] = [m for m in family.parent.messages if isinstance(m, ToolResultMessage)]
    assert not answer.is_error


async def test_a_stop_whose_grace_expires_aborts_the_child_too() -> None:
    gate = Gate()
    family = Family(child_default=reply(ToolCall("s", "slow", {})), child_tools=[gate.tool()])
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:

            async def stop_with_grace() -> None:
                await gate.entered.wait()
                family.parent.stop(grace=0.01)  # the gate never opens

            tg.start_soon(stop_with_grace)
            result = await family.parent.prompt("go")
    family.check_well_formed()
    assert result.outcome is RunOutcome.ABORTED
    [child] = family.children
    [child_answer] = [m for m in child.messages if isinstance(m, ToolResultMessage)]
    assert child_answer.is_error and child_answer.content[0].text == "Operation aborted"  # type: ignore[union-attr]
    [answer] = [m for m in family.parent.messages if isinstance(m, ToolResultMessage)]
    assert answer.is_error and answer.content[0].text == "Operation aborted"  # type: ignore[union-attr]


async def test_the_childs_usage_and_calls_are_on_the_result_and_in_the_parents_usage() -> None:
    child_script = [reply(ToolCall("w1", "work", {}), dollars=0.1), reply(dollars=0.2)]
    family = Family(child_script)
    with anyio.fail_after(BOUND):
        result = await family.parent.prompt("go")
    family.check_well_formed()
    [answer] = [m for m in family.parent.messages if isinstance(m, ToolResultMessage)]
    assert answer.usage is not None
    assert answer.usage.cost.total == pytest.approx(0.3)
    assert answer.usage.total_tokens == 40
    assert answer.nested_calls is not None
    assert answer.nested_calls["complete"] is True
    [record] = answer.nested_calls["calls"]
    assert (record["id"], record["name"], record["status"]) == ("w1", "work", "ok")
    # The parent's own two replies (0.01 and nothing) and the child's run.
    assert result.usage.cost.total == pytest.approx(0.31)
    assert result.usage.total_tokens == 80
