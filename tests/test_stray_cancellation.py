"""A cancellation nobody sent the run is a failure of what raised it; a real one still cancels.

Stray cancellations exist only on asyncio: code that awaits a task somebody else cancelled gets
that task's ``CancelledError`` although its own task was not cancelled (trio raises ``Cancelled``
only for a cancelled scope). The tests that raise one run on asyncio only for that reason; the
tests that real cancellations still propagate run on both backends.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from pi_core import (
    Agent,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    StreamStart,
    TextContent,
    TextDelta,
    TextStart,
    ToolResultMessage,
)
from pi_core.providers.faux import FauxProvider
from pi_core.testing import check_event_grammar, check_transcript
from support import BlockingStream, Recorder, calls_then_text, make_tool

pytestmark = pytest.mark.anyio

asyncio_only = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""Only asyncio can raise a cancellation its task was not sent."""

NATIVE_CANCEL_IS_VISIBLE = sys.version_info >= (3, 11)


async def await_a_cancelled_task() -> None:
    """What a library does on connection loss: await its own task, which it cancelled."""
    inner = asyncio.ensure_future(asyncio.sleep(3600))
    await asyncio.sleep(0)
    inner.cancel()
    await inner


async def stray_tool(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
    await await_a_cancelled_task()
    return "unreachable"


def agent_for(provider: FauxProvider, *tools: Any, **options: Any) -> tuple[Agent, Recorder]:
    agent = Agent(model=provider.models[0], stream_fn=provider.stream, tools=tools, **options)
    recorder = Recorder()
    agent.subscribe(lambda event, signal: recorder(event))
    return agent, recorder


def tool_results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def text_of(message: ToolResultMessage | AssistantMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


@asyncio_only
@pytest.mark.parametrize("mode", ["parallel", "sequential"])
@pytest.mark.parametrize("tool_timeout", [None, 60.0])
async def test_a_stray_cancellation_is_the_tools_error(
    mode: str, tool_timeout: float | None
) -> None:
    provider = calls_then_text("stray", "fine")
    agent, recorder = agent_for(
        provider,
        make_tool("stray", stray_tool, timeout=tool_timeout),
        make_tool("fine"),
        tool_execution=mode,
    )
    with anyio.fail_after(5):
        await agent.prompt("go")
    check_event_grammar(recorder.events)
    stray, fine = tool_results(agent)
    assert stray.is_error
    assert text_of(stray) == "CancelledError"
    assert not fine.is_error
    final = agent.state.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert text_of(final) == "after"  # the run went on to the next turn
    assert recorder.types[-1] == "agent_end"
    assert agent.state.error_message is None


@asyncio_only
async def test_a_stray_cancellation_in_after_tool_call_is_the_calls_error() -> None:
    async def after(context: Any, signal: Any) -> None:
        await await_a_cancelled_task()

    agent, recorder = agent_for(calls_then_text("t"), make_tool("t"), after_tool_call=after)
    with anyio.fail_after(5):
        await agent.prompt("go")
    check_event_grammar(recorder.events)
    [result] = tool_results(agent)
    assert result.is_error
    assert recorder.types[-1] == "agent_end"


async def stray_stream(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    partial = AssistantMessage([], model.api, model.provider, model.id)
    yield StreamStart(partial)
    partial.content.append(TextContent("Hel"))
    yield TextStart(0, partial)
    yield TextDelta(0, "Hel", partial)
    await await_a_cancelled_task()


@asyncio_only
async def test_a_stray_cancellation_in_the_stream_is_the_replys_error() -> None:
    agent = Agent(model=Model("m", api="a", provider="p"), stream_fn=stray_stream)
    recorder = Recorder()
    agent.subscribe(lambda event, signal: recorder(event))
    if not NATIVE_CANCEL_IS_VISIBLE:
        # Python 3.10 cannot tell it from the host's Task.cancel(): it propagates, as documented.
        with anyio.fail_after(5), pytest.raises(asyncio.CancelledError):
            await agent.prompt("go")
        return
    with anyio.fail_after(5):
        await agent.prompt("go")
    check_event_grammar(recorder.events)
    final = agent.state.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == "error"
    assert final.error_message == "CancelledError"
    assert text_of(final) == "Hel"  # the reply as far as it came
    assert agent.state.error_message == "CancelledError"
    assert recorder.types[-1] == "agent_end"


# --- real cancellations still cancel --------------------------------------------------------------


class CancelledTool:
    """A tool that waits until cancelled, noting that it was; ``running`` is set once it waits."""

    def __init__(self) -> None:
        self.running = anyio.Event()
        self.cancelled = False

    async def __call__(self, tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        self.running.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return "unreachable"


async def test_the_hosts_cancel_scope_still_cancels_a_running_tool() -> None:
    tool = CancelledTool()
    agent, recorder = agent_for(calls_then_text("wait"), make_tool("wait", tool))
    with anyio.fail_after(5), anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(agent.prompt, "go")
            await tool.running.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert tool.cancelled
    [result] = tool_results(agent)  # kept without events, so that every call has a result
    assert text_of(result).startswith("Tool execution was interrupted (")
    check_transcript(agent.state.messages)
    assert "agent_end" not in recorder.types
    assert agent.signal is None  # the run settled


async def test_an_abort_still_cancels_a_running_tool() -> None:
    tool = CancelledTool()
    agent, recorder = agent_for(calls_then_text("wait"), make_tool("wait", tool))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(agent.prompt, "go")
            await tool.running.wait()
            agent.abort()
    check_event_grammar(recorder.events)
    [result] = tool_results(agent)
    assert text_of(result) == "Operation aborted"


async def test_the_hosts_cancel_scope_still_cancels_the_stream() -> None:
    stream = BlockingStream()
    agent = Agent(model=Model("m", api="a", provider="p"), stream_fn=stream)
    with anyio.fail_after(5), anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(agent.prompt, "go")
            await stream.started.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert [m.role for m in agent.state.messages] == ["user"]


@asyncio_only
@pytest.mark.parametrize("where", ["tool", "stream"])
async def test_the_hosts_task_cancel_still_cancels(where: str) -> None:
    """``Task.cancel()`` on the task running ``prompt()`` (asyncio's own way to cancel)."""
    tool = CancelledTool()
    stream = BlockingStream()
    provider = calls_then_text("wait")
    stream_fn = provider.stream if where == "tool" else stream
    agent = Agent(model=provider.models[0], stream_fn=stream_fn, tools=[make_tool("wait", tool)])
    task = asyncio.ensure_future(agent.prompt("go"))
    with anyio.fail_after(5):
        await (tool.running if where == "tool" else stream.started).wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    results = tool_results(agent)
    assert [text_of(r) for r in results] == (
        ["Tool execution was interrupted (CancelledError)"] if where == "tool" else []
    )
    check_transcript(agent.state.messages)
    assert agent.signal is None


async def test_a_tool_returning_normally_is_unaffected() -> None:
    async def fine(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("ok")])

    agent, recorder = agent_for(calls_then_text("fine"), make_tool("fine", fine))
    with anyio.fail_after(5):
        await agent.prompt("go")
    check_event_grammar(recorder.events)
    [result] = tool_results(agent)
    assert text_of(result) == "ok"
