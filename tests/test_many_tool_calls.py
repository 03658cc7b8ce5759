"""Replies of thousands of tool calls: linear state updates, an abort heard within a few dozen
calls, and the limit of calls one reply may make."""

from __future__ import annotations

import tracemalloc
from typing import Any

import anyio
import anyio.abc
import pytest

from pi_core import (
    AbortController,
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    BeforeToolCallContext,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core._batch import CHECKPOINT_EVERY
from pi_core.nursery import AbortSignal
from pi_core.testing import ScriptedStream, check_event_grammar, check_transcript, scripted_reply
from support import make_tool

pytestmark = pytest.mark.anyio


def many_calls(count: int) -> ScriptedStream:
    """A model whose first reply makes ``count`` calls to ``t``, streamed in one burst."""
    calls = [ToolCall(f"c{index}", "t", {}) for index in range(count)]
    return ScriptedStream(
        [scripted_reply(*calls)], default=scripted_reply("done"), checkpoints=False, chunk_size=64
    )


def result_texts(messages: list[Any]) -> list[str]:
    texts = []
    for message in messages:
        if isinstance(message, ToolResultMessage):
            block = message.content[0]
            assert isinstance(block, TextContent)
            texts.append(block.text)
    return texts


async def test_an_abort_from_another_task_is_heard_within_a_few_dozen_calls() -> None:
    # Preflight and the results' emits need not yield on their own; a batch of thousands of
    # calls yields every CHECKPOINT_EVERY calls, so an abort sent from another task (a UI's
    # stop button) stops it there instead of after every call has been prepared.
    count = 5000
    stream = many_calls(count)
    controller = AbortController()
    first_start = anyio.Event()
    prepared: list[str] = []
    events: list[AgentEvent] = []

    def before(context: BeforeToolCallContext, signal: AbortSignal) -> None:
        prepared.append(context.tool_call.id)

    def emit(event: AgentEvent) -> None:
        events.append(event)
        if event.type == "tool_execution_start":
            first_start.set()

    async def abort_at_first_start(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        task_status.started()  # waiting before the run starts
        await first_start.wait()
        controller.abort()

    config = AgentLoopConfig(stream.model, stream_fn=stream, before_tool_call=before)
    context = AgentContext("", [], [make_tool("t")])
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            await tg.start(abort_at_first_start)
            messages = await run_agent_loop(
                [UserMessage("go")], context, config, emit, signal=controller.signal
            )
    assert 0 < len(prepared) <= 3 * CHECKPOINT_EVERY
    texts = result_texts(messages)
    assert len(texts) == count  # every call is answered, the rest as aborted
    assert texts[-1] == "Operation aborted"
    check_event_grammar(events)
    check_transcript(messages)


async def test_the_pending_calls_of_a_long_batch_are_updated_in_place() -> None:
    # Each tool_execution_start / _end updates the Agent's pending calls before the listener
    # sees it. Rebuilding the set at every update copies it: a reply of n calls then allocates
    # (and costs) n²; updated in place, an update allocates nothing but the set's rare growth.
    count = 3000
    stream = many_calls(count)
    agent = Agent(model=stream.model, stream_fn=stream, tools=[make_tool("t")])
    large_allocations = 0
    updates = 0

    def listener(event: AgentEvent) -> None:
        nonlocal large_allocations, updates
        if event.type in ("tool_execution_start", "tool_execution_end"):
            current, peak = tracemalloc.get_traced_memory()
            updates += 1
            if peak - current > 16 * 1024:
                large_allocations += 1
            tracemalloc.reset_peak()

    agent.subscribe(listener)
    tracemalloc.start()
    try:
        with anyio.fail_after(60):
            result = await agent.prompt("go")
    finally:
        tracemalloc.stop()
    assert result.error_message is None
    assert updates == 2 * count
    assert large_allocations < 60  # the set's and the lists' growth, a few dozen times at most
    assert agent.state.pending_tool_calls == frozenset()


async def test_pending_tool_calls_is_a_snapshot() -> None:
    stream = many_calls(3)
    seen: list[frozenset[str]] = []
    agent = Agent(model=stream.model, stream_fn=stream, tools=[make_tool("t")])

    def listener(event: AgentEvent) -> None:
        if event.type.startswith("tool_execution"):
            seen.append(agent.state.pending_tool_calls)

    agent.subscribe(listener)
    await agent.prompt("go")
    assert seen[:3] == [frozenset({"c0"}), frozenset({"c0", "c1"}), frozenset({"c0", "c1", "c2"})]
    assert seen[-1] == frozenset()


@pytest.mark.parametrize("level", ["loop", "agent"])
async def test_calls_past_the_limit_of_a_reply_get_an_error_result(level: str) -> None:
    stream = many_calls(5)
    executed: list[str] = []

    async def execute(call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        executed.append(call_id)
        return "ok"

    tool = make_tool("t", execute)
    if level == "loop":
        events: list[AgentEvent] = []
        config = AgentLoopConfig(stream.model, stream_fn=stream, max_tool_calls_per_reply=3)
        context = AgentContext("", [], [tool])
        messages = await run_agent_loop([UserMessage("go")], context, config, events.append)
    else:
        agent = Agent(model=stream.model, stream_fn=stream, tools=[tool])
        agent.max_tool_calls_per_reply = 3
        events = []
        agent.subscribe(events.append)
        await agent.prompt("go")
        messages = agent.state.messages
    assert sorted(executed) == ["c0", "c1", "c2"]  # the first three, in any order
    refused = (
        "Tool call not run: the reply made 5 tool calls, and only the first 3 run "
        "(max_tool_calls_per_reply). Make fewer calls per reply."
    )
    assert result_texts(messages) == ["ok", "ok", "ok", refused, refused]
    assert [m.is_error for m in messages if isinstance(m, ToolResultMessage)] == [
        False,
        False,
        False,
        True,
        True,
    ]
    check_event_grammar(events)


async def test_a_sequential_batch_keeps_the_limit_too() -> None:
    stream = many_calls(4)
    config = AgentLoopConfig(
        stream.model, stream_fn=stream, tool_execution="sequential", max_tool_calls_per_reply=2
    )
    context = AgentContext("", [], [make_tool("t")])
    messages = await run_agent_loop([UserMessage("go")], context, config, lambda event: None)
    texts = result_texts(messages)
    assert texts[:2] == ["t done", "t done"]
    assert all(text.startswith("Tool call not run") for text in texts[2:])


def test_the_limit_is_a_positive_int_or_none() -> None:
    assert AgentLoopConfig(many_calls(1).model).max_tool_calls_per_reply == 10_000
    assert Agent(max_tool_calls_per_reply=None).max_tool_calls_per_reply is None
    for bad in (0, -1, 2.5, "10"):
        with pytest.raises(ValueError, match="max_tool_calls_per_reply"):
            Agent(max_tool_calls_per_reply=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_tool_calls_per_reply"):
            AgentLoopConfig(many_calls(1).model, max_tool_calls_per_reply=bad)  # type: ignore[arg-type]
