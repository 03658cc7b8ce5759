"""RunLimits: a turn, token or cost limit ends the run after the reply's calls; the deadline
aborts it. Both end with a transcript the next run continues, with fresh counters."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from control._support import Tools, endless, text_reply, tool_reply, usage
from pi_core import (
    AbortController,
    Agent,
    AgentContext,
    AgentLoopConfig,
    LimitReached,
    RunLimits,
    RunOutcome,
    TextContent,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core.testing import ScriptedStream, check_event_grammar, check_transcript

pytestmark = pytest.mark.anyio


def _agent(stream: ScriptedStream, tools: Tools, **options: Any) -> tuple[Agent, list[Any]]:
    agent = Agent(model=stream.model, stream_fn=stream, tools=[tools.work()], **options)
    events: list[Any] = []
    agent.subscribe(events.append)
    return agent, events


def _runs(events: list[Any]) -> list[list[Any]]:
    """The events split into runs, at each agent_start."""
    runs: list[list[Any]] = []
    for event in events:
        if event.type == "agent_start":
            runs.append([])
        runs[-1].append(event)
    return runs


@pytest.mark.parametrize(
    ("limits", "spent", "turns", "reached"),
    [
        (RunLimits(max_turns=2), usage(), 2, LimitReached("max_turns", 2, 2)),
        (RunLimits(max_input_tokens=100), usage(60), 2, LimitReached("max_input_tokens", 100, 120)),
        (RunLimits(max_output_tokens=9), usage(0, 3), 3, LimitReached("max_output_tokens", 9, 9)),
        (
            RunLimits(max_total_tokens=50),
            usage(10, 10),
            3,
            LimitReached("max_total_tokens", 50, 60),
        ),
        (RunLimits(max_cost=0.25), usage(cost=0.1), 3, LimitReached("max_cost", 0.25, 0.3)),
    ],
)
async def test_a_limit_ends_the_run_after_the_calls_of_the_reply_that_reached_it(
    limits: RunLimits, spent: Any, turns: int, reached: LimitReached
) -> None:
    stream, tools = endless(spent), Tools()
    agent, events = _agent(stream, tools, limits=limits)
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    assert stream.calls == turns
    assert result.stopped_by is not None
    assert (result.stopped_by.kind, result.stopped_by.limit) == (reached.kind, reached.limit)
    assert result.stopped_by.value == pytest.approx(reached.value)
    assert result.usage.total_tokens == turns * spent.total_tokens
    assert result.outcome is RunOutcome.LIMIT and result.ok and result.error_message is None
    # The reply that reached the limit had its call run and answered: the transcript continues.
    assert isinstance(agent.messages[-1], ToolResultMessage)
    assert len(tools.ran) == stream.calls
    assert result.reply is not None and result.reply.stop_reason == "toolUse"
    assert [e.type for e in events[-2:]] == ["turn_end", "agent_end"]
    check_event_grammar(events)
    check_transcript(agent.messages)


async def test_the_next_run_counts_afresh() -> None:
    stream, tools = endless(), Tools()
    agent, events = _agent(stream, tools, limits=RunLimits(max_turns=2))
    with anyio.fail_after(10):
        first = await agent.prompt("go")
        second = await agent.continue_()
    assert first.stopped_by == second.stopped_by == LimitReached("max_turns", 2, 2)
    assert stream.calls == 4
    for run in _runs(events):
        check_event_grammar(run)
    check_transcript(agent.messages)


async def test_a_run_that_ends_below_its_limits_reports_none() -> None:
    stream = ScriptedStream([tool_reply("a", spent=usage(5, 5)), text_reply(spent=usage(5, 5))])
    agent, _ = _agent(stream, Tools(), limits=RunLimits(max_turns=3, max_total_tokens=100))
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    assert result.stopped_by is None and result.outcome is RunOutcome.DONE
    assert result.usage.total_tokens == 20 and result.text == "done"


async def test_queued_messages_stay_queued_when_a_limit_ends_the_run() -> None:
    stream, tools = endless(), Tools()
    agent, _ = _agent(stream, tools, limits=RunLimits(max_turns=1))
    agent.follow_up("later")

    def steer(event: Any) -> None:
        if event.type == "tool_execution_end":
            agent.steer("now")

    agent.subscribe(steer)
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    assert result.stopped_by == LimitReached("max_turns", 1, 1)
    assert stream.calls == 1
    assert agent.has_queued_messages()
    [queued] = agent.peek_queued_messages()  # steering comes before the follow-up
    assert isinstance(queued, UserMessage) and queued.content == [TextContent("now")]
    assert [m.role for m in agent.messages] == ["system", "user", "assistant", "toolResult"]


async def test_the_deadline_aborts_a_running_tool_call() -> None:
    stream, tools = endless(), Tools()
    agent = Agent(
        model=stream.model, stream_fn=stream, tools=[tools.slow()], limits=RunLimits(deadline=0.05)
    )
    stream.default = tool_reply("s1", name="slow")
    events: list[Any] = []
    agent.subscribe(events.append)
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    assert tools.entered.is_set() and tools.ran == []
    assert result.stopped_by is not None and result.stopped_by.kind == "deadline"
    assert result.stopped_by.limit == 0.05 and result.stopped_by.value >= 0.05
    assert result.outcome is RunOutcome.LIMIT and not result.ok
    assert result.error_message == "Run deadline of 0.05 s exceeded"
    [answer] = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert answer.is_error and answer.content[0].text == "Operation aborted"  # type: ignore[union-attr]
    check_event_grammar(events)
    check_transcript(agent.messages)
    # The next run has a deadline of its own.
    tools.gate.set()
    stream.default = text_reply()
    with anyio.fail_after(10):
        again = await agent.continue_()
    assert again.outcome is RunOutcome.DONE and again.stopped_by is None


async def test_the_deadline_aborts_a_streaming_reply() -> None:
    stream = ScriptedStream([text_reply("a long answer")], block_at=(0, 2))
    agent = Agent(model=stream.model, stream_fn=stream, limits=RunLimits(deadline=0.05))
    events: list[Any] = []
    agent.subscribe(events.append)
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    assert result.reply is not None and result.reply.stop_reason == "aborted"
    assert result.stopped_by is not None and result.stopped_by.kind == "deadline"
    assert agent.state.error_message == "Run deadline of 0.05 s exceeded"
    check_event_grammar(events)


async def test_the_loop_honours_limits_without_a_signal_of_its_own() -> None:
    tools = Tools()
    stream = endless(usage(input=10))
    config = AgentLoopConfig(stream.model, stream_fn=stream, limits=RunLimits(max_input_tokens=25))
    events: list[Any] = []
    context = AgentContext("", [], [tools.work()])
    with anyio.fail_after(10):
        new = await run_agent_loop([UserMessage("go")], context, config, events.append)
    assert stream.calls == 3
    assert isinstance(new[-1], ToolResultMessage)
    check_event_grammar(events)


async def test_the_loop_deadline_also_obeys_the_callers_signal() -> None:
    tools = Tools()
    stream = ScriptedStream(default=tool_reply("s1", name="slow"))
    config = AgentLoopConfig(stream.model, stream_fn=stream, limits=RunLimits(deadline=3600))
    controller = AbortController()
    events: list[Any] = []
    context = AgentContext("", [], [tools.slow()])

    async def abort_when_entered() -> None:
        await tools.entered.wait()
        controller.abort("caller")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(abort_when_entered)
            new = await run_agent_loop(
                [UserMessage("go")], context, config, events.append, signal=controller.signal
            )
    [answer] = [m for m in new if isinstance(m, ToolResultMessage)]
    assert answer.content[0].text == "Operation aborted"  # type: ignore[union-attr]
    check_event_grammar(events)


def test_the_agent_refuses_a_bad_limits_value() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        Agent(limits=RunLimits(max_turns=0))
