"""The transcript owns the prompt and the tools: the Agent's leading system message, the loop's
tool-change declarations, and what changed on the Agent with them (read-only prompt, reset,
continue, peeking at the queues)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from pi_core import (
    Agent,
    AgentBusyError,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    NextTurn,
    StreamDone,
    StreamOptions,
    SystemMessage,
    TextContent,
    Tool,
    ToolReference,
    TurnContext,
    UserMessage,
    current_system_prompt,
    current_tools,
    default_convert_to_llm,
    run_agent_loop,
)
from pi_core.providers.faux import faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar, check_transcript
from support import Recorder, faux, make_tool

pytestmark = pytest.mark.anyio


class Seen:
    """A stream function that answers "ok" and keeps the context of every request."""

    def __init__(self) -> None:
        self.contexts: list[Context] = []

    async def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.contexts.append(context)
        yield StreamDone("stop", AssistantMessage([TextContent("ok")], "x", "y", model.id))


def names(tools: list[Tool] | None) -> list[str]:
    return [tool.name for tool in tools or ()]


def message_roles(events: list[Any]) -> list[str]:
    """``kind(role)`` for the message events, the rest by kind, updates left out."""
    return [
        f"{e.type}({e.message.role})" if e.type in ("message_start", "message_end") else e.type
        for e in events
        if e.type != "message_update"
    ]


# --- the Agent's leading system message ----------------------------------------------------------


def test_the_agent_seeds_a_leading_system_message_of_its_prompt_and_tools() -> None:
    agent = Agent(system_prompt="SYS", tools=[make_tool("t1")])
    [leading] = agent.messages
    assert isinstance(leading, SystemMessage)
    assert (leading.content, leading.timestamp) == ("SYS", 0)
    assert names(leading.tools_added) == ["t1"]
    assert type(leading.tools_added[0]) is Tool  # type: ignore[index]  # a declaration only
    assert agent.system_prompt == agent.state.system_prompt == "SYS"
    assert Agent().messages == []  # no prompt and no tools: nothing to declare


def test_given_messages_that_start_with_a_system_message_are_kept_as_they_are() -> None:
    own = SystemMessage("mine", {"style": "terse"})
    agent = Agent(system_prompt="ignored", messages=[own, UserMessage("hi")])
    assert agent.messages[0] is own and len(agent.messages) == 2
    assert agent.system_prompt == "mine\n\nterse"
    seeded = Agent(system_prompt="SYS", messages=[UserMessage("hi")])
    assert [m.role for m in seeded.messages] == ["system", "user"]


def test_the_system_prompt_is_read_only_and_says_how_to_change_it() -> None:
    agent = Agent(system_prompt="SYS")
    for owner in (agent, agent.state):
        with pytest.raises(AttributeError, match="send a SystemMessage through prompt"):
            owner.system_prompt = "NEW"
    assert agent.system_prompt == "SYS"


async def test_a_system_message_sent_with_a_prompt_replaces_a_section() -> None:
    seen = Seen()
    leading = SystemMessage("Base.", {"lang": "English."})
    agent = Agent(model=Model("m"), stream_fn=seen, messages=[leading])
    await agent.prompt([SystemMessage(sections={"lang": "French."}), UserMessage("hi")])
    assert agent.system_prompt == "Base.\n\nFrench."
    assert current_system_prompt(seen.contexts[0].messages) == "Base.\n\nFrench."


# --- tool changes ---------------------------------------------------------------------------------


async def test_a_change_of_the_agents_tools_is_declared_before_the_next_prompt() -> None:
    seen = Seen()
    t1, t2 = make_tool("t1"), make_tool("t2")
    agent = Agent(system_prompt="SYS", model=Model("m"), stream_fn=seen, tools=[t1])
    recorder = Recorder()
    agent.subscribe(recorder)
    await agent.prompt("first")
    assert "message_start(system)" not in message_roles(recorder.events)  # nothing changed
    agent.tools = [t2]
    recorder.events.clear()
    await agent.prompt("second")
    assert message_roles(recorder.events)[:6] == [
        "agent_start", "turn_start", "message_start(system)", "message_end(system)",
        "message_start(user)", "message_end(user)",
    ]  # fmt: skip
    change = agent.messages[3]
    assert isinstance(change, SystemMessage) and change.content == ""
    assert names(change.tools_added) == ["t2"]
    assert change.tools_removed == [ToolReference("t1")]
    assert names(current_tools(seen.contexts[1].messages)) == ["t2"]
    assert agent.system_prompt == "SYS"
    check_transcript(agent.messages)


async def test_a_changed_definition_is_a_removal_and_an_addition() -> None:
    agent = Agent(model=Model("m"), stream_fn=Seen(), tools=[make_tool("t")])
    agent.tools = [make_tool("t", parameters={"type": "object", "properties": {"x": {}}})]
    await agent.prompt("go")
    change = agent.messages[1]
    assert isinstance(change, SystemMessage)
    assert change.tools_removed == [ToolReference("t")] and names(change.tools_added) == ["t"]
    assert current_tools(agent.messages)[0].parameters["properties"] == {"x": {}}


async def test_a_sent_system_message_carries_the_run_s_tools_not_its_own() -> None:
    agent = Agent(model=Model("m"), stream_fn=Seen(), tools=[make_tool("t1")])
    agent.tools = [make_tool("t2")]
    mine = SystemMessage("More rules.", tools_added=[Tool("ghost", "never there", {})])
    await agent.prompt([mine, UserMessage("go")])
    [change] = [m for m in agent.messages[1:] if isinstance(m, SystemMessage)]
    assert change is not mine and change.content == "More rules."  # a copy, its tools replaced
    assert names(change.tools_added) == ["t2"] and change.tools_removed == [ToolReference("t1")]
    assert mine.tools_added is not None  # the caller's message is left alone


async def test_continuing_a_transcript_that_declares_no_tools_declares_them_after_its_tail() -> (
    None
):
    seen = Seen()
    agent = Agent(system_prompt="S", model=Model("m"), stream_fn=seen, tools=[make_tool("echo")])
    agent.messages = [UserMessage("hi")]  # the seeded system message is gone, with the prompt
    recorder = Recorder()
    agent.subscribe(recorder)
    await agent.continue_()
    assert message_roles(recorder.events) == [
        "agent_start", "turn_start", "message_start(system)", "message_end(system)",
        "message_start(assistant)", "message_end(assistant)", "turn_end", "agent_end",
    ]  # fmt: skip
    assert [m.role for m in seen.contexts[0].messages] == ["user", "system"]
    assert agent.system_prompt == ""


async def test_a_tool_added_by_prepare_next_turn_is_declared_before_that_turns_steering() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("t1", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("done"),
        ]
    )
    steering: list[Any] = []

    async def steer(*_: Any) -> str:
        steering.append(UserMessage("steer"))
        return "ok"

    t1, t2 = make_tool("t1", steer), make_tool("t2")

    def prepare(turn: TurnContext) -> NextTurn:
        context = AgentContext("", list(turn.context.messages), [t1, t2])
        return NextTurn(context=context)

    def poll() -> list[Any]:
        drained, steering[:] = list(steering), []
        return drained

    recorder = Recorder()
    context = AgentContext("", [SystemMessage("S", tools_added=[t1])], [t1])
    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        prepare_next_turn=prepare,
        get_steering_messages=poll,
    )
    new = await run_agent_loop([UserMessage("go")], context, config, recorder)
    check_event_grammar(recorder.events)
    types = message_roles(recorder.events)
    second = types.index("turn_start", 2)
    assert types[second : second + 5] == [
        "turn_start", "message_start(system)", "message_end(system)",
        "message_start(user)", "message_end(user)",
    ]  # fmt: skip
    assert [m.role for m in new] == [
        "user",
        "assistant",
        "toolResult",
        "system",
        "user",
        "assistant",
    ]
    assert names(new[3].tools_added) == ["t2"] and new[3].tools_removed is None  # type: ignore[union-attr]


async def test_the_low_level_prompt_goes_into_the_first_declaration_and_nothing_is_shorthand() -> (
    None
):
    seen = Seen()
    config = AgentLoopConfig(Model("m"), stream_fn=seen)
    context = AgentContext("Be brief.", [], [make_tool("t")])
    new = await run_agent_loop([UserMessage("hi")], context, config, Recorder())
    leading = new[0]
    assert isinstance(leading, SystemMessage) and leading.content == "Be brief."
    assert names(leading.tools_added) == ["t"]
    [request] = seen.contexts
    assert (request.system_prompt, request.tools) == (None, [])  # the transcript carries them
    assert current_system_prompt(request.messages) == "Be brief."
    # A transcript that has a system message already rules: the shorthand is not added again.
    again = await run_agent_loop(
        [UserMessage("more")], AgentContext("Other.", new, [make_tool("t")]), config, Recorder()
    )
    assert [m.role for m in again] == ["user", "assistant"]
    assert current_system_prompt(seen.contexts[1].messages) == "Be brief."


def test_the_default_convert_to_llm_keeps_system_messages() -> None:
    messages: list[AgentMessage] = [SystemMessage("S"), UserMessage("u")]
    assert default_convert_to_llm(messages) == messages


# --- reset, continue, the queues ------------------------------------------------------------------


async def test_reset_refuses_during_a_run_and_keeps_the_system_baseline() -> None:
    started, release = anyio.Event(), anyio.Event()

    async def slow(*_: Any) -> str:
        started.set()
        await release.wait()
        return "ok"

    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("slow", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("done"),
        ]
    )
    agent = Agent(
        system_prompt="SYS",
        model=provider.get_model(),
        stream_fn=provider.stream,
        tools=[make_tool("slow", slow)],
    )
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "go")
            await started.wait()
            with pytest.raises(
                AgentBusyError,
                match=r"^Agent is already processing\. Wait for completion before resetting\.$",
            ):
                agent.reset()
            release.set()
    agent.messages.append(SystemMessage(sections={"extra": "More."}))
    agent.reset()
    [baseline] = agent.messages
    assert isinstance(baseline, SystemMessage)
    assert agent.system_prompt == "SYS\n\nMore." and names(baseline.tools_added) == ["slow"]


async def test_continue_refuses_a_transcript_of_only_system_messages() -> None:
    agent = Agent(system_prompt="S", model=Model("m"), stream_fn=Seen())
    with pytest.raises(ValueError, match=r"^No messages to continue from$"):
        await agent.continue_()


def contents(messages: list[AgentMessage]) -> list[Any]:
    return [getattr(message, "content", None) for message in messages]


def test_peek_shows_what_the_next_drain_takes_without_taking_it() -> None:
    agent = Agent()
    assert agent.peek_queued_messages() == []
    agent.follow_up("later")
    assert contents(agent.peek_queued_messages()) == [[TextContent("later")]]
    agent.steer("one")
    agent.steer("two")
    assert contents(agent.peek_queued_messages()) == [[TextContent("one")]]
    agent.steering_mode = "all"
    peeked = agent.peek_queued_messages()
    assert contents(peeked) == [[TextContent("one")], [TextContent("two")]]
    assert agent.has_queued_messages() and len(agent.peek_queued_messages()) == 2  # still there
