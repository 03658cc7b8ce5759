"""Agent.stop(): the run finishes its current step (the streaming reply, then that reply's
calls) and ends before its next request; after ``grace`` seconds the stop becomes an abort."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from control._support import Tools, endless, text_reply, tool_reply
from pi_core import (
    Agent,
    AgentTool,
    BeforeToolCallContext,
    RunOutcome,
    ToolExecution,
    ToolResultMessage,
)
from pi_core.testing import ScriptedStream, check_event_grammar, check_transcript

pytestmark = pytest.mark.anyio

MODES: list[ToolExecution] = ["parallel", "sequential"]


def _agent(
    stream: ScriptedStream, tools: list[AgentTool], **options: Any
) -> tuple[Agent, list[Any]]:
    agent = Agent(model=stream.model, stream_fn=stream, tools=tools, **options)
    events: list[Any] = []
    agent.subscribe(events.append)
    return agent, events


def _check(agent: Agent, events: list[Any]) -> None:
    check_event_grammar(events)
    check_transcript(agent.messages)


async def test_a_stop_while_the_reply_streams_lets_it_and_its_calls_finish() -> None:
    stream, tools = endless(calls=2), Tools()
    agent, events = _agent(stream, [tools.work()])

    def stop_mid_reply(event: Any) -> None:
        if event.type == "message_update":
            agent.stop()

    agent.subscribe(stop_mid_reply)
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    assert stream.calls == 1
    assert result.reply is not None and result.reply.stop_reason == "toolUse"
    assert sorted(tools.ran) == ["w0", "w1"]  # the reply's calls ran, to the end
    assert isinstance(agent.messages[-1], ToolResultMessage)
    assert result.outcome is RunOutcome.DONE and result.ok and result.stopped_by is None
    _check(agent, events)


@pytest.mark.parametrize("mode", MODES)
async def test_a_stop_during_a_batch_lets_every_call_of_it_finish(mode: ToolExecution) -> None:
    tools = Tools()
    stream = ScriptedStream(default=tool_reply("s1", name="slow"))
    stream.default.content += tool_reply("w1").content  # type: ignore[union-attr]
    agent, events = _agent(stream, [tools.slow(), tools.work()], tool_execution=mode)

    async def stop_then_release() -> None:
        await tools.entered.wait()
        agent.stop()
        agent.stop()  # idempotent
        tools.gate.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(stop_then_release)
            result = await agent.prompt("go")
    assert sorted(tools.ran) == ["s1", "w1"] and stream.calls == 1
    assert [m.role for m in result.messages] == ["user", "assistant", "toolResult", "toolResult"]
    assert result.outcome is RunOutcome.DONE
    _check(agent, events)


@pytest.mark.parametrize("mode", MODES)
async def test_the_stop_becomes_an_abort_when_the_grace_expires(mode: ToolExecution) -> None:
    tools = Tools()  # the gate is never opened: the slow call would wait for ever
    stream = ScriptedStream(default=tool_reply("w1"))
    stream.default.content += tool_reply("s1", name="slow").content  # type: ignore[union-attr]
    agent, events = _agent(stream, [tools.work(), tools.slow()], tool_execution=mode)

    async def stop_with_grace() -> None:
        await tools.entered.wait()
        agent.stop(grace=0.05)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(stop_with_grace)
            result = await agent.prompt("go")
    answers = {m.tool_call_id: m for m in result.messages if isinstance(m, ToolResultMessage)}
    assert answers["w1"].is_error is False
    assert answers["s1"].content[0].text == "Operation aborted"  # type: ignore[union-attr]
    assert result.outcome is RunOutcome.ABORTED and stream.calls == 1
    _check(agent, events)


async def test_a_grace_that_is_not_needed_leaves_nothing_running() -> None:
    stream, tools = endless(), Tools()
    agent, events = _agent(stream, [tools.work()])

    def stop(event: Any) -> None:
        if event.type == "tool_execution_start":
            agent.stop(grace=3600)

    agent.subscribe(stop)
    with anyio.fail_after(10):  # an hour's timer would hold the run open
        result = await agent.prompt("go")
    assert result.outcome is RunOutcome.DONE and stream.calls == 1
    assert agent.signal is None and not agent.state.is_streaming
    _check(agent, events)


async def test_a_stop_waits_for_before_tool_call_and_keeps_the_queues() -> None:
    stream, tools = endless(), Tools()
    entered, release = anyio.Event(), anyio.Event()

    async def before(context: BeforeToolCallContext, signal: Any) -> None:
        entered.set()
        await release.wait()

    agent, events = _agent(stream, [tools.work()], before_tool_call=before)
    agent.follow_up("later")

    async def stop_in_hook() -> None:
        await entered.wait()
        agent.steer("now")
        agent.stop()
        release.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(stop_in_hook)
            result = await agent.prompt("go")
    assert tools.ran == ["w0"] and stream.calls == 1 and result.ok
    assert agent.has_queued_messages()  # the steering and the follow-up stay queued
    _check(agent, events)
    # The next run goes on where the stopped one ended, queued messages first.
    stream.default = text_reply("over")
    with anyio.fail_after(10):
        again = await agent.continue_()
    assert again.text == "over"
    user_texts = [m.content[0].text for m in again.messages if m.role == "user"]  # type: ignore[union-attr]
    assert user_texts == ["now", "later"]


async def test_an_abort_after_a_stop_aborts_at_once() -> None:
    tools = Tools()
    stream = ScriptedStream(default=tool_reply("s1", name="slow"))
    agent, events = _agent(stream, [tools.slow()])

    async def stop_then_abort() -> None:
        await tools.entered.wait()
        agent.stop(grace=3600)
        agent.abort()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(stop_then_abort)
            result = await agent.prompt("go")
    assert result.outcome is RunOutcome.ABORTED and tools.ran == []
    _check(agent, events)


async def test_a_stop_when_idle_does_nothing() -> None:
    stream = ScriptedStream([text_reply("hi")])
    agent, _ = _agent(stream, [])
    agent.stop()
    agent.stop(grace=1)
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    assert result.text == "hi" and result.outcome is RunOutcome.DONE
