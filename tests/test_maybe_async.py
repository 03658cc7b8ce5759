"""Listeners, emits and hooks may be sync or async: what a sync one returns never breaks a run.

A sync callable's plain return value is ignored (``sys.stdout.write`` returns an ``int``); a hook's
plain value that is not its result type counts as ``None``; an awaitable a sync callable returns
is awaited.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pi_core import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
    UserMessage,
    agent_loop,
    run_agent_loop,
)
from pi_core._maybe_async import READY, awaiting, is_async_callable
from pi_core.testing import check_event_grammar
from support import calls_then_text, make_tool

pytestmark = pytest.mark.anyio

# What the loop's tests expect of one run: a tool call, then a text reply.
TYPES_OF_ONE_CALL_THEN_TEXT = [
    "agent_start", "turn_start", "message_start", "message_end",
    "message_start", "message_end", "tool_execution_start", "tool_execution_end",
    "message_start", "message_end", "turn_end",
    "turn_start", "message_start", "message_end", "turn_end", "agent_end",
]  # fmt: skip
LOOP_TYPES_OF_ONE_CALL_THEN_TEXT = [
    *TYPES_OF_ONE_CALL_THEN_TEXT[:2],
    "message_start", "message_end",  # a loop run declares its context's tools first
    *TYPES_OF_ONE_CALL_THEN_TEXT[2:],
]  # fmt: skip


def stray_value(value: object) -> Callable[..., object]:
    """A sync hook that returns ``value`` whatever it is called with."""
    return lambda *_args: value


def agent_calling_echo() -> Agent:
    provider = calls_then_text("echo")
    return Agent(model=provider.get_model(), stream_fn=provider.stream, tools=[make_tool("echo")])


def types_without_updates(events: Sequence[AgentEvent]) -> list[str]:
    return [event.type for event in events if event.type != "message_update"]


@pytest.mark.parametrize("beside_another", [False, True])
async def test_a_sync_listener_that_returns_a_value_does_not_fail_the_run(
    beside_another: bool,
) -> None:
    agent = agent_calling_echo()
    out = io.StringIO()
    agent.subscribe(lambda event: out.write(event.type + "\n"))  # returns an int
    seen: list[AgentEvent] = []

    def record(event: AgentEvent, signal: object) -> str:
        seen.append(event)
        return "ignored"

    if beside_another:  # several listeners are called one after another, not the single one
        agent.subscribe(record)
    result = await agent.prompt("Hi")
    assert result.ok, result.error_message
    assert result.text == "after"
    written = out.getvalue().splitlines()
    assert [kind for kind in written if kind != "message_update"] == TYPES_OF_ONE_CALL_THEN_TEXT
    if beside_another:
        assert written == [event.type for event in seen]


async def test_a_sync_listener_that_returns_an_awaitable_is_awaited() -> None:
    agent = agent_calling_echo()
    awaited: list[str] = []

    async def note(event: AgentEvent) -> None:
        awaited.append(event.type)

    agent.subscribe(lambda event: note(event))
    result = await agent.prompt("Hi")
    assert result.ok, result.error_message
    assert awaited[0] == "agent_start"
    assert awaited[-1] == "agent_end"


async def test_run_agent_loop_takes_a_sync_emit_that_returns_a_value() -> None:
    provider = calls_then_text("echo")
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    out = io.StringIO()
    new = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(tools=[make_tool("echo")]),
        config,
        lambda event: out.write(event.type + "\n"),
    )
    assert [message.role for message in new] == [
        "system", "user", "assistant", "toolResult", "assistant"
    ]  # fmt: skip
    assert [kind for kind in out.getvalue().splitlines() if kind != "message_update"] == (
        LOOP_TYPES_OF_ONE_CALL_THEN_TEXT
    )


def stray_hooks(value: object) -> dict[str, Any]:
    """Every hook of a loop config, sync, returning ``value`` (not any hook's result type)."""
    return {
        "transform_context": lambda messages, signal: messages,
        "get_api_key": stray_value(value),
        "get_steering_messages": stray_value(value),
        "get_follow_up_messages": stray_value(value),
        "before_tool_call": stray_value(value),
        "after_tool_call": stray_value(value),
        "before_tool_batch": stray_value(value),
        "prepare_next_turn": stray_value(value),
        "should_stop_after_turn": stray_value(value),
    }


@pytest.mark.parametrize("value", [7, "text", 1.5, {"block": True}])
async def test_sync_hooks_that_return_stray_values_count_as_returning_none(value: object) -> None:
    provider = calls_then_text("echo")
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream, **stray_hooks(value))
    context = AgentContext(tools=[make_tool("echo")])
    async with agent_loop([UserMessage("go")], context, config) as events:
        seen = [event async for event in events]
        new = await events.result()
    check_event_grammar(seen)
    assert types_without_updates(seen) == LOOP_TYPES_OF_ONE_CALL_THEN_TEXT
    [tool_end] = [event for event in seen if event.type == "tool_execution_end"]
    assert not tool_end.is_error
    assert tool_end.result.content[0].text == "echo done"  # type: ignore[union-attr]
    assert new[-1].content[0].text == "after"  # type: ignore[union-attr]


async def test_an_agent_runs_with_sync_hooks_that_return_stray_values() -> None:
    agent = agent_calling_echo()
    for name, hook in stray_hooks(7).items():
        if hasattr(Agent, name):
            setattr(agent, name, hook)
    seen: list[AgentEvent] = []
    agent.subscribe(lambda event: seen.append(event))
    result = await agent.prompt("Hi")
    assert result.ok, result.error_message
    assert types_without_updates(seen) == TYPES_OF_ONE_CALL_THEN_TEXT


async def test_sync_hooks_that_return_awaitables_are_awaited() -> None:
    provider = calls_then_text("echo")
    called: list[str] = []

    def later(name: str, value: object) -> Any:
        async def hook() -> object:
            called.append(name)
            return value

        return lambda *_args: hook()

    async def verdict(context: BeforeToolCallContext, signal: object) -> BeforeToolCallResult:
        called.append("before_tool_call")
        return BeforeToolCallResult(block=True, reason=f"no {context.tool_call.name}")

    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        before_tool_call=lambda context, signal: verdict(context, signal),
        after_tool_call=later("after_tool_call", None),
        before_tool_batch=later("before_tool_batch", 7),
        prepare_next_turn=later("prepare_next_turn", None),
        should_stop_after_turn=later("should_stop_after_turn", False),
        finish_turn=later("finish_turn", None),
        prepare_request=later("prepare_request", None),
    )
    seen: list[AgentEvent] = []
    await run_agent_loop(
        [UserMessage("go")], AgentContext(tools=[make_tool("echo")]), config, seen.append
    )
    [tool_end] = [event for event in seen if event.type == "tool_execution_end"]
    assert tool_end.is_error
    assert tool_end.result.content[0].text == "no echo"  # type: ignore[union-attr]
    # A blocked call never executes, so neither before_tool_batch nor after_tool_call runs.
    # prepare_next_turn runs only before a turn that follows.
    assert called == [
        "prepare_request", "before_tool_call", "finish_turn", "should_stop_after_turn",
        "prepare_next_turn", "prepare_request", "finish_turn", "should_stop_after_turn",
    ]  # fmt: skip


async def test_awaiting_decides_once_what_to_await() -> None:
    async def coroutine_function(event: object) -> None:
        pass

    class AsyncCallable:
        async def __call__(self, event: object) -> None:
            pass

    def returns_int(event: object) -> int:
        return 3

    instance = AsyncCallable()
    assert awaiting(coroutine_function) is coroutine_function
    assert awaiting(instance) is instance
    assert is_async_callable(instance)
    assert not is_async_callable(returns_int)
    assert awaiting(returns_int)(None) is READY
    await awaiting(returns_int)(None)
