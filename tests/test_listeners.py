"""Agent listeners: one or two arguments, sync or async, checked once at subscribe; and what a
listener that raises does, during the run and during an abort's close-out alike."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest

from pi_core import AbortSignal, Agent, AgentEvent, AssistantMessage
from pi_core.providers.faux import faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar
from support import faux, make_tool

pytestmark = pytest.mark.anyio


def replying_agent() -> Agent:
    provider = faux()
    provider.set_responses([faux_assistant_message("Hello.")])
    return Agent(model=provider.get_model(), stream_fn=provider.stream)


async def test_a_one_argument_listener_sees_what_a_two_argument_listener_sees() -> None:
    agent = replying_agent()
    one: list[AgentEvent] = []
    two: list[AgentEvent] = []
    agent.subscribe(lambda event: one.append(event))
    agent.subscribe(lambda event, signal: two.append(event))
    await agent.prompt("Hi")
    assert one == two
    assert [event.type for event in one][0 :: len(one) - 1] == ["agent_start", "agent_end"]


async def test_async_methods_callables_and_optional_signals_are_called_right() -> None:
    agent = replying_agent()
    seen: list[tuple[str, object]] = []

    class Screen:
        async def show(self, event: AgentEvent) -> None:
            await anyio.lowlevel.checkpoint()
            seen.append(("method", event.type))

        def __call__(self, event: AgentEvent) -> None:
            seen.append(("callable", event.type))

    def with_default(event: AgentEvent, signal: AbortSignal | None = None) -> None:
        seen.append(("default", signal is not None))

    def variadic(*args: Any) -> None:
        seen.append(("variadic", len(args)))

    screen = Screen()
    for listener in (screen.show, screen, with_default, variadic):
        agent.subscribe(listener)
    await agent.prompt("Hi")
    events = len(seen) // 4
    assert seen[:4] == [
        ("method", "agent_start"),
        ("callable", "agent_start"),
        ("default", True),
        ("variadic", 2),
    ]
    assert len(seen) == 4 * events


@pytest.mark.parametrize(
    ("listener", "shown"),
    [
        (lambda: None, "<lambda>()"),
        (lambda a, b, c: None, "<lambda>(a, b, c)"),
        (lambda *, event: None, "<lambda>(*, event)"),
    ],
)
async def test_a_listener_that_cannot_take_an_event_is_refused_at_subscribe(
    listener: Any, shown: str
) -> None:
    agent = replying_agent()
    with pytest.raises(TypeError, match=r"listener\(event\) or listener\(event, signal\)") as info:
        agent.subscribe(listener)
    assert str(info.value).endswith(f"{shown} cannot be")
    with pytest.raises(TypeError, match="a listener must be callable, not str"):
        agent.subscribe("print")  # type: ignore[arg-type]
    result = await agent.prompt("Hi")  # nothing was subscribed: the run goes well
    assert result.ok


async def test_the_signature_is_read_once_at_subscribe_not_per_event() -> None:
    reads: list[int] = []

    class Counting:
        def __call__(self, event: AgentEvent) -> None:
            pass

        @property
        def __signature__(self) -> inspect.Signature:
            reads.append(1)
            return inspect.signature(Counting.__call__).replace(
                parameters=list(inspect.signature(Counting.__call__).parameters.values())[1:]
            )

    agent = replying_agent()
    agent.subscribe(Counting())
    await agent.prompt("Hi")
    assert len(reads) == 1


async def test_unsubscribe_takes_the_listener_as_it_was_given() -> None:
    agent = replying_agent()
    seen: list[str] = []

    def listener(event: AgentEvent) -> None:
        seen.append(event.type)

    unsubscribe = agent.subscribe(listener)
    assert agent.subscribe(listener)() is True  # the same function is subscribed once
    assert unsubscribe() is False
    await agent.prompt("Hi")
    assert seen == []


# --- a listener that raises -----------------------------------------------------------------


def calling_agent(tool_started: anyio.Event, *, blocks: bool) -> Agent:
    async def tool(tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any) -> str:
        tool_started.set()
        if blocks:
            await anyio.sleep_forever()
        return "done"

    provider = faux()
    call = faux_tool_call("tool", {}, id="c1")
    provider.set_responses(
        [faux_assistant_message([call], stop_reason="toolUse"), faux_assistant_message("Done.")]
    )
    return Agent(
        model=provider.get_model(), stream_fn=provider.stream, tools=[make_tool("tool", tool)]
    )


@pytest.mark.parametrize("aborted", [False, True], ids=["running", "abort-close-out"])
async def test_a_listener_raising_fails_the_run_the_same_way_in_the_close_out(
    aborted: bool,
) -> None:
    started = anyio.Event()
    agent = calling_agent(started, blocks=aborted)
    first: list[AgentEvent] = []
    later: list[AgentEvent] = []
    raised = False

    def breaks_once(event: AgentEvent) -> None:
        nonlocal raised
        first.append(event)
        if event.type == "tool_execution_end" and not raised:
            raised = True
            raise ValueError("listener bug")

    agent.subscribe(breaks_once)
    agent.subscribe(later.append)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "Go.")
            await started.wait()
            if aborted:
                agent.abort()  # the call's tool_execution_end is then part of the close-out
    check_event_grammar(first)
    assert [event.type for event in first][-5:] == [
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert "tool_execution_end" not in [event.type for event in later]  # the listener after it
    assert later[-4:] == first[-4:]  # ... sees the failure lifecycle
    failure = agent.state.messages[-1]
    assert isinstance(failure, AssistantMessage)
    assert failure.stop_reason == ("aborted" if aborted else "error")
    assert failure.error_message == agent.state.error_message == "listener bug"
