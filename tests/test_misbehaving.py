"""Listeners that raise, tools that interrupt, streams that break their grammar.

Whatever goes wrong, no event follows ``agent_end``, and the transcript an Agent keeps answers
every tool call.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import anyio
import pytest

from pi_core import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamDone,
    StreamError,
    StreamOptions,
    StreamStart,
    TextContent,
    TextDelta,
    TextStart,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.testing import check_event_grammar, check_transcript
from support import Recorder, calls_then_text, make_tool

pytestmark = pytest.mark.anyio

MODEL = Model("m", api="a", provider="p")


class ListenerBroke(Exception):
    pass


class Interrupt(BaseException):
    """Stands for ``KeyboardInterrupt`` / ``SystemExit``: not an ``Exception``."""


# --- listeners ------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", ["text", "error"])
async def test_a_listener_raising_at_agent_end_raises_from_prompt_and_nothing_follows(
    reply: str,
) -> None:
    provider = FauxProvider(seed=1)
    provider.set_responses(
        [faux_assistant_message("hi", stop_reason="error" if reply == "error" else "stop")]
    )
    agent = Agent(model=provider.models[0], stream_fn=provider.stream)
    recorder = Recorder()

    def listener(event: AgentEvent, signal: Any) -> None:
        recorder(event)
        if event.type == "agent_end":
            raise ListenerBroke("listener broke")

    agent.subscribe(listener)
    with anyio.fail_after(5), pytest.raises(ListenerBroke):
        await agent.prompt("go")
    assert recorder.types.count("agent_end") == 1
    assert recorder.types[-1] == "agent_end"
    check_event_grammar(recorder.events)
    assert not agent.state.is_streaming
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_a_listener_raising_earlier_still_gets_the_failure_lifecycle() -> None:
    provider = FauxProvider(seed=1)
    provider.set_responses([faux_assistant_message("hi")])
    agent = Agent(model=provider.models[0], stream_fn=provider.stream)
    recorder = Recorder()

    def listener(event: AgentEvent, signal: Any) -> None:
        recorder(event)
        if event.type == "turn_end" and recorder.types.count("turn_end") == 1:
            raise ListenerBroke("listener broke")

    agent.subscribe(listener)
    with anyio.fail_after(5):
        await agent.prompt("go")
    assert recorder.types[-1] == "agent_end"
    assert recorder.types.count("agent_end") == 1
    check_event_grammar(recorder.events)
    assert agent.state.error_message == "listener broke"


# --- BaseExceptions from tools --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, Interrupt])
async def test_an_interrupt_from_a_tool_propagates_and_every_call_keeps_a_result(
    mode: Literal["parallel", "sequential"], exc_type: type[BaseException], anyio_backend: str
) -> None:
    if exc_type is KeyboardInterrupt and anyio_backend == "asyncio":
        # asyncio re-raises it from the event loop itself, past every await: nothing to catch.
        pytest.skip("asyncio raises KeyboardInterrupt out of the event loop")

    async def interrupting(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        raise exc_type

    provider = calls_then_text("fine", "interrupting", "never")
    never_ran = anyio.Event()

    async def slow(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        await anyio.sleep_forever()
        never_ran.set()
        return "unreachable"

    agent = Agent(
        model=provider.models[0],
        stream_fn=provider.stream,
        tools=[
            make_tool("fine"),
            make_tool("interrupting", interrupting),
            make_tool("never", slow),
        ],
        tool_execution=mode,
    )
    recorder = Recorder()
    agent.subscribe(lambda event, signal: recorder(event))
    with anyio.fail_after(5), pytest.raises(exc_type):
        await agent.prompt("go")
    assert "agent_end" not in recorder.types  # no events are sent while interrupted
    assert not agent.state.is_streaming
    assert agent.state.pending_tool_calls == frozenset()
    messages = agent.state.messages
    check_transcript(messages)
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["c0", "c1", "c2"]
    interrupted = f"Tool execution was interrupted ({exc_type.__name__})"
    texts = [r.content[0].text for r in results]  # type: ignore[union-attr]
    assert texts[1:] == [interrupted, interrupted]
    assert texts[0] == ("fine done" if mode == "sequential" else interrupted)
    # The transcript ends with results: the run can be continued.
    with anyio.fail_after(5):
        await agent.continue_()
    final = agent.state.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.content == [TextContent("after")]
    assert not never_ran.is_set()


def test_a_keyboard_interrupt_from_a_tool_under_asyncio_run_keeps_every_call_answered() -> None:
    """asyncio raises it out of the event loop; ``asyncio.run`` then cancels the run."""
    program = textwrap.dedent(
        """
        import asyncio
        from pi_core import Agent, AgentTool
        from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

        async def interrupt(tool_call_id, params, signal, on_update):
            raise KeyboardInterrupt

        provider = FauxProvider(seed=1)
        call = faux_tool_call("interrupt", {}, id="c1")
        provider.set_responses([faux_assistant_message([call], stop_reason="toolUse")])
        schema = {"type": "object", "properties": {}}
        agent = Agent(
            model=provider.models[0],
            stream_fn=provider.stream,
            tools=[AgentTool("interrupt", "Interrupts.", schema, interrupt)],
        )
        try:
            asyncio.run(agent.prompt("go"))
        except KeyboardInterrupt:
            last = agent.state.messages[-1]
            print(last.role, last.content[0].text, agent.state.is_streaming)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    # Which of the two reaches the run depends on how the Python version shuts asyncio down.
    assert done.stdout.strip() in {
        "toolResult Tool execution was interrupted (KeyboardInterrupt) False",
        "toolResult Tool execution was interrupted (CancelledError) False",
    }


# --- malformed streams ----------------------------------------------------------------------------


def stream_of(
    *make_events: Callable[[AssistantMessage], Any],
) -> Callable[..., AsyncIterator[AssistantMessageEvent]]:
    """A stream function yielding the events built by ``make_events`` around one partial."""

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        partial = AssistantMessage([], model.api, model.provider, model.id)
        for make in make_events:
            yield make(partial)

    return stream


def start(partial: AssistantMessage) -> StreamStart:
    return StreamStart(partial)


def text(partial: AssistantMessage) -> TextStart:
    partial.content.append(TextContent("Hel"))
    return TextStart(0, partial)


MALFORMED: dict[str, tuple[Callable[..., Any], str]] = {
    "done without message": (
        stream_of(start, text, lambda p: StreamDone("stop", None)),  # type: ignore[arg-type]
        "Malformed stream: the done event carries no final message",
    ),
    "error without message": (
        stream_of(start, lambda p: StreamError("error", None)),  # type: ignore[arg-type]
        "Malformed stream: the error event carries no final message",
    ),
    "error as a string": (
        stream_of(start, text, lambda p: StreamError("error", "upstream said no")),  # type: ignore[arg-type]
        "upstream said no",
    ),
    "endless start": (
        stream_of(*[start] * 1000, lambda p: StreamDone("stop", p)),
        "Malformed stream: a second start event",
    ),
    "delta without partial": (
        stream_of(start, text, lambda p: TextDelta(0, "x", None)),  # type: ignore[arg-type]
        "Malformed stream: TextDelta is not an event with a partial message",
    ),
    "not an event": (
        stream_of(start, lambda p: {"type": "text_delta"}),
        "Malformed stream: dict is not an event with a partial message",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_a_malformed_stream_fails_the_reply(case: str) -> None:
    stream_fn, error_message = MALFORMED[case]
    recorder = Recorder()
    config = AgentLoopConfig(MODEL, stream_fn=stream_fn)
    with anyio.fail_after(5):
        new = await run_agent_loop([UserMessage("go")], AgentContext(), config, recorder)
    check_event_grammar(recorder.events)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == "error"
    assert final.error_message == error_message
    assert recorder.types[-1] == "agent_end"
    assert recorder.types.count("message_start") == 2  # the prompt's and the reply's


async def test_a_malformed_stream_in_the_agent_is_its_error_message() -> None:
    stream_fn, error_message = MALFORMED["done without message"]
    agent = Agent(model=MODEL, stream_fn=stream_fn)
    recorder = Recorder()
    agent.subscribe(lambda event, signal: recorder(event))
    with anyio.fail_after(5):
        await agent.prompt("go")
    check_event_grammar(recorder.events)
    assert agent.state.error_message == error_message
    final = agent.state.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.content == [TextContent("Hel")]  # the reply as far as it came
