"""Debug runs (the suite sets ``PI_CORE_DEBUG=1``) warn about a tool that holds the event loop."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from pi_core import Agent, AgentContext, AgentLoopConfig, ToolCall, UserMessage, run_agent_loop
from pi_core._blocking import SLOW_STEP_SECONDS
from pi_core._run_group import DEBUG
from pi_core.testing import ScriptedStream, check_transcript, scripted_reply
from support import make_tool

pytestmark = pytest.mark.anyio


def one_call_to(name: str) -> ScriptedStream:
    return ScriptedStream([scripted_reply(ToolCall("c1", name, {}))], default=scripted_reply("ok"))


def warnings_about_the_loop(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "pi_core" and "held the event loop" in record.getMessage()
    ]


def test_the_suite_runs_in_debug_mode() -> None:
    assert DEBUG


async def test_a_tool_that_blocks_the_loop_is_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def execute(*_: Any) -> str:
        await anyio.lowlevel.checkpoint()
        time.sleep(3 * SLOW_STEP_SECONDS)  # noqa: ASYNC251  # the blocking call under test
        return "slept"

    stream = one_call_to("sleepy")
    agent = Agent(model=stream.model, stream_fn=stream, tools=[make_tool("sleepy", execute)])
    with caplog.at_level(logging.WARNING, logger="pi_core"):
        result = await agent.prompt("go")
    assert result.error_message is None
    [warning] = warnings_about_the_loop(caplog)
    assert warning.startswith("Tool sleepy (call c1) held the event loop for ")
    assert "anyio.to_thread.run_sync" in warning
    check_transcript(agent.state.messages)


async def test_a_tool_that_waits_without_blocking_is_not(caplog: pytest.LogCaptureFixture) -> None:
    # Longer than the threshold in all, but never holding the loop: no warning.
    async def execute(*_: Any) -> str:
        for _step in range(3):
            await anyio.sleep(SLOW_STEP_SECONDS)
        return "waited"

    stream = one_call_to("patient")
    config = AgentLoopConfig(stream.model, stream_fn=stream)
    context = AgentContext("", [], [make_tool("patient", execute)])
    with caplog.at_level(logging.WARNING, logger="pi_core"):
        messages = await run_agent_loop([UserMessage("go")], context, config, lambda event: None)
    assert warnings_about_the_loop(caplog) == []
    assert [m.role for m in messages] == ["system", "user", "assistant", "toolResult", "assistant"]


async def test_a_watched_tool_is_still_cancelled_by_an_abort() -> None:
    started = anyio.Event()

    async def execute(*_: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("not reached")

    stream = one_call_to("forever")
    agent = Agent(model=stream.model, stream_fn=stream, tools=[make_tool("forever", execute)])
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def abort_when_started() -> None:
                await started.wait()
                agent.abort()

            tg.start_soon(abort_when_started)
            result = await agent.prompt("go")
    assert result.error_message is not None
    check_transcript(agent.state.messages)
