"""``@tool`` on a plain ``def``: a worker thread, abandoned on abort or timeout, told by its signal.

Each test blocks the function on a ``threading.Event`` that only the event loop can set, so a
function that ran on the loop would block it: the bounded wait inside the function then times out
and the test fails on what the function reports, instead of hanging.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

from pi_core import (
    AbortController,
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentToolResult,
    TextContent,
    ToolExecutionUpdate,
    UserMessage,
    run_agent_loop,
    tool,
)
from pi_core.providers.faux import faux_assistant_message, faux_tool_call
from support import faux, run_tool_call

pytestmark = pytest.mark.anyio

BOUND = 10.0
"""Seconds a function waits for the loop at most: reached only when the loop is blocked."""


async def wait_in_thread(event: threading.Event) -> None:
    """Wait for a thread's event without blocking the loop."""
    assert await anyio.to_thread.run_sync(event.wait, BOUND)


async def test_a_plain_function_runs_in_a_worker_thread_while_the_loop_goes_on() -> None:
    loop_thread = threading.get_ident()
    entered, release = threading.Event(), threading.Event()

    @tool
    def blocking(x: int) -> str:
        """Block until the loop releases it."""
        entered.set()
        released = release.wait(BOUND)  # only another task of the loop sets it
        return f"{x} released={released} other_thread={threading.get_ident() != loop_thread}"

    async def release_when_entered() -> None:
        await wait_in_thread(entered)
        release.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(release_when_entered)
        result, _ = await run_tool_call(blocking, {"x": 7})
    assert result.content == [TextContent("7 released=True other_thread=True")]
    assert not result.is_error


async def test_an_abort_answers_the_call_at_once_and_the_thread_sees_its_signal() -> None:
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[bool, object]] = []
    updates_sent: list[bool] = []

    @tool
    def slow(signal: AbortSignal, on_update: Any) -> str:
        """Block, then report whether the call was abandoned."""
        on_update(AgentToolResult([TextContent("working")]))
        entered.set()
        release.wait(BOUND)
        seen.append((signal.aborted, signal.reason))
        on_update(AgentToolResult([TextContent("too late")]))  # after the call ended: dropped
        updates_sent.append(True)
        finished.set()
        return "finished"

    controller = AbortController()

    async def abort_when_entered() -> None:
        await wait_in_thread(entered)
        controller.abort("user stop")

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_when_entered)
        result, recorder = await run_tool_call(slow, {}, controller.signal)
    # The run is over while the thread still blocks: the call was answered without it.
    assert not finished.is_set()
    assert result.is_error
    assert result.content == [TextContent("Operation aborted")]
    release.set()
    await wait_in_thread(finished)
    assert seen == [(True, "user stop")]
    assert updates_sent == [True]
    updates = [e for e in recorder.events if isinstance(e, ToolExecutionUpdate)]
    assert [u.partial_result.content for u in updates] == [[TextContent("working")]]


async def test_a_timeout_answers_the_call_while_the_thread_is_blocked() -> None:
    release = threading.Event()

    @tool(timeout=0.01)
    def stuck() -> str:
        """Block until released."""
        release.wait(BOUND)  # past the timeout in any case: only the test releases it
        return "finished"

    try:
        result, _ = await run_tool_call(stuck, {})
    finally:
        release.set()
    assert result.is_error
    assert result.content == [TextContent("Tool stuck timed out after 0.01 s")]


async def test_a_call_abandoned_without_an_abort_still_aborts_the_threads_signal() -> None:
    # A listener that raises fails the run, which cancels the running call: no abort, yet the
    # thread is told through its signal.
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[bool, object]] = []

    @tool
    def watched(signal: AbortSignal, on_update: Any) -> str:
        """Report progress, then block until released."""
        on_update(AgentToolResult([TextContent("started")]))  # the listener raises on it
        entered.set()
        release.wait(BOUND)
        seen.append((signal.aborted, signal.reason))
        finished.set()
        return "finished"

    def emit(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionUpdate):
            raise RuntimeError("listener broke")

    provider = faux()
    call = faux_tool_call("watched", {}, id="c1")
    provider.set_responses([faux_assistant_message([call], stop_reason="toolUse")])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    with anyio.fail_after(BOUND), pytest.raises(RuntimeError, match="listener broke"):
        await run_agent_loop([UserMessage("go")], AgentContext(tools=[watched]), config, emit)
    release.set()
    await wait_in_thread(finished)
    assert entered.is_set()
    assert seen == [(True, "tool call ended")]


async def test_a_plain_function_returns_a_json_value() -> None:
    @tool
    def add(a: int, b: int) -> dict[str, int]:
        """Add two numbers."""
        return {"sum": a + b}

    result, _ = await run_tool_call(add, {"a": 2, "b": 3})
    assert result.content == [TextContent('{"sum": 5}')]
    assert result.details == {"sum": 5}


async def test_thread_false_runs_a_quick_function_on_the_loop() -> None:
    loop_thread = threading.get_ident()

    @tool(thread=False)
    def where() -> str:
        """Say which thread runs it."""
        return "loop" if threading.get_ident() == loop_thread else "other"

    result, _ = await run_tool_call(where, {})
    assert result.content == [TextContent("loop")]
