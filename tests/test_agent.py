"""The Agent: state, listeners, queues, prompt / continue_ rules, abort and failure lifecycle."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from pi_core import (
    AbortSignal,
    Agent,
    AgentBusyError,
    AgentEvent,
    AssistantMessage,
    AssistantMessageEvent,
    BeforeToolCallContext,
    BeforeToolCallResult,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)
from pi_core.models import ModelNotFoundError, get_model
from pi_core.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from pi_core.testing import check_event_grammar, check_transcript
from support import BlockingStream, faux, make_tool

pytestmark = pytest.mark.anyio

BUSY_PROMPT = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)
BUSY_CONTINUE = "Agent is already processing. Wait for completion before continuing."


def make_agent(provider: FauxProvider, **options: Any) -> Agent:
    return Agent(model=provider.get_model(), stream_fn=provider.stream, **options)


class Listener:
    """Records events and the signal each was delivered with."""

    def __init__(self, agent: Agent) -> None:
        self.events: list[AgentEvent] = []
        self.signals: list[AbortSignal] = []
        agent.subscribe(self)

    def __call__(self, event: AgentEvent, signal: AbortSignal) -> None:
        self.events.append(event)
        self.signals.append(signal)

    def types(self) -> list[str]:
        return [e.type for e in self.events if e.type != "message_update"]


def error_of(agent: Agent) -> str | None:
    return agent.state.error_message


def roles(agent: Agent) -> list[str]:
    return [m.role for m in agent.state.messages]


async def test_text_prompt() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("Hi!")])
    agent = make_agent(provider)
    listener = Listener(agent)
    await agent.prompt("Hello")
    check_event_grammar(listener.events)
    assert roles(agent) == ["user", "assistant"]
    assert agent.state.messages[0].content == [TextContent("Hello")]  # type: ignore[union-attr]
    assert not agent.state.is_streaming
    assert agent.signal is None
    assert agent.state.error_message is None
    assert len(set(map(id, listener.signals))) == 1


async def test_prompt_forms() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message(str(i)) for i in range(3)])
    agent = make_agent(provider)
    image = ImageContent("AAAA", "image/png")
    await agent.prompt("look", [image])
    assert agent.state.messages[0].content == [TextContent("look"), image]  # type: ignore[union-attr]
    message = UserMessage("one message")
    await agent.prompt(message)
    assert agent.state.messages[2] is message
    batch = [UserMessage("a"), UserMessage("b")]
    listener = Listener(agent)
    await agent.prompt(batch)
    assert listener.types()[:6] == [
        "agent_start", "turn_start", "message_start", "message_end", "message_start", "message_end",
    ]  # fmt: skip


async def test_state_is_reduced_before_listeners_and_streaming_covers_agent_end() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("reply")])
    agent = make_agent(provider)
    checks: list[Any] = []

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_end":
            checks.append(agent.state.messages[-1] is event.message)
        if event.type == "message_start":
            checks.append(agent.state.streaming_message is event.message)
        if event.type == "agent_end":
            checks.append(agent.state.is_streaming)
            checks.append(signal is agent.signal)
            with pytest.raises(AgentBusyError, match=re.escape(BUSY_PROMPT)):
                await agent.prompt("again")
            with pytest.raises(AgentBusyError, match=re.escape(BUSY_CONTINUE)):
                await agent.continue_()

    agent.subscribe(listener)
    await agent.prompt("go")
    assert all(checks)
    assert len(checks) == 6


async def test_pending_tool_calls_seen_from_hooks_and_listeners() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("t", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("done"),
        ]
    )
    seen: list[Any] = []

    def before(ctx: BeforeToolCallContext, _signal: Any) -> None:
        seen.append((roles(agent), agent.state.pending_tool_calls))

    agent = make_agent(provider, tools=[make_tool("t")], before_tool_call=before)

    def listener(event: AgentEvent, _signal: AbortSignal) -> None:
        if event.type == "tool_execution_end":
            seen.append(agent.state.pending_tool_calls)

    agent.subscribe(listener)
    await agent.prompt("go")
    assert seen == [(["system", "user", "assistant"], frozenset({"c1"})), frozenset()]
    assert roles(agent) == ["system", "user", "assistant", "toolResult", "assistant"]
    check_transcript(agent.state.messages)


async def test_steering_during_a_tool_is_injected_after_the_batch() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("t", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("steered"),
        ]
    )

    async def execute(*_: Any) -> str:
        agent.steer("change of plan")
        return "ok"

    agent = make_agent(provider, tools=[make_tool("t", execute)])
    await agent.prompt("go")
    assert roles(agent) == ["system", "user", "assistant", "toolResult", "user", "assistant"]
    assert agent.state.messages[4].content == [TextContent("change of plan")]  # type: ignore[union-attr]
    assert not agent.has_queued_messages()


@pytest.mark.parametrize(("mode", "calls"), [("one-at-a-time", 3), ("all", 2)])
async def test_follow_up_modes(mode: Any, calls: int) -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message(str(i)) for i in range(3)])
    agent = make_agent(provider, follow_up_mode=mode)
    agent.follow_up("one")
    agent.follow_up(UserMessage("two"))
    assert agent.has_queued_messages()
    await agent.prompt("go")
    assert provider.call_count == calls
    assert not agent.has_queued_messages()


async def test_steering_mode_is_read_at_drain_time() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message(str(i)) for i in range(3)])
    agent = make_agent(provider)
    agent.steer("a")
    agent.steer("b")
    agent.steering_mode = "all"
    await agent.prompt("go")
    assert provider.call_count == 1
    assert roles(agent) == ["user", "user", "user", "assistant"]


async def test_clear_queues() -> None:
    agent = Agent()
    agent.steer("a")
    agent.follow_up("b")
    agent.clear_steering_queue()
    assert agent.has_queued_messages()
    agent.clear_follow_up_queue()
    assert not agent.has_queued_messages()
    agent.steer("a")
    agent.follow_up("b")
    agent.clear_all_queues()
    assert not agent.has_queued_messages()
    with pytest.raises(ValueError, match="queue mode"):
        agent.steering_mode = "some"  # type: ignore[assignment]


async def test_continue_errors() -> None:
    agent = Agent()
    with pytest.raises(ValueError, match=r"^No messages to continue from$"):
        await agent.continue_()
    agent.state.messages = [UserMessage("q"), AssistantMessage([], "a", "p", "m")]
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        await agent.continue_()


async def test_continue_from_assistant_with_two_steers() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message(str(i)) for i in range(3)])
    agent = make_agent(provider, messages=[UserMessage("q"), faux_assistant_message("a")])
    agent.steer("s1")
    agent.steer("s2")
    await agent.continue_()
    assert roles(agent)[-4:] == ["user", "assistant", "user", "assistant"]
    assert provider.call_count == 2


async def test_continue_from_assistant_drains_steering_then_follow_ups() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message(f"A{i}") for i in range(1, 4)])
    agent = make_agent(provider, messages=[UserMessage("q"), faux_assistant_message("a")])
    agent.steer("S1")
    agent.follow_up("F1")
    agent.follow_up("F2")
    await agent.continue_()
    texts = [m.content[0].text for m in agent.state.messages[2:]]  # type: ignore[union-attr]
    assert texts == ["S1", "A1", "F1", "A2", "F2", "A3"]
    assert not agent.has_queued_messages()


async def test_continue_from_user_message_and_multi_turn_context() -> None:
    provider = faux()
    seen: list[list[str]] = []

    def reply(context: Context, *_: Any) -> AssistantMessage:
        seen.append([m.role for m in context.messages])
        return faux_assistant_message([faux_thinking("hmm"), faux_text("answer")])

    provider.set_responses([reply, reply])
    agent = make_agent(provider, messages=[UserMessage("q")])
    await agent.continue_()
    await agent.prompt("and then?")
    assert seen == [["user"], ["user", "assistant", "user"]]
    first = agent.state.messages[1]
    assert isinstance(first, AssistantMessage)
    assert first.content[0] == ThinkingContent("hmm")


async def test_abort_while_streaming_sets_error_message() -> None:
    stream = BlockingStream()
    agent = Agent(model=Model("m"), stream_fn=stream)
    listener = Listener(agent)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "go")
            await stream.started.wait()
            assert agent.state.is_streaming
            agent.abort()
    assert agent.state.error_message == "Request was aborted"
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert all(signal.aborted for signal in listener.signals[-3:])
    check_event_grammar(listener.events)
    assert not agent.state.is_streaming
    assert agent.signal is None


async def test_abort_during_tools_then_continue_resumes() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("stuck", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("resumed"),
        ]
    )
    started = anyio.Event()

    async def stuck(*_: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    agent = make_agent(provider, tools=[make_tool("stuck", stuck)])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "go")
            await started.wait()
            assert agent.state.pending_tool_calls == {"c1"}
            agent.abort()
    assert agent.state.error_message == "Operation aborted"
    assert roles(agent) == ["system", "user", "assistant", "toolResult"]
    await agent.continue_()
    assert roles(agent)[-1] == "assistant"
    assert error_of(agent) is None
    check_transcript(agent.state.messages)


async def test_abort_from_another_thread() -> None:
    stream = BlockingStream()
    agent = Agent(model=Model("m"), stream_fn=stream)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "go")
            await stream.started.wait()
            await anyio.to_thread.run_sync(lambda: anyio.from_thread.run_sync(agent.abort))
    assert agent.state.error_message == "Request was aborted"


async def test_host_cancellation_leaves_the_agent_idle_and_usable() -> None:
    stream = BlockingStream()
    agent = Agent(model=Model("m"), stream_fn=stream)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "go")
            await stream.started.wait()
            tg.cancel_scope.cancel()
    assert not agent.state.is_streaming
    assert agent.signal is None
    assert agent.state.pending_tool_calls == frozenset()
    provider = faux()
    provider.set_responses([faux_assistant_message("fine")])
    agent.stream_fn = provider.stream
    agent.model = provider.get_model()
    await agent.prompt("again")
    assert agent.state.messages[-1].content == [TextContent("fine")]  # type: ignore[union-attr]


async def test_embedded_in_a_host_task_group_steered_and_aborted_by_siblings() -> None:
    provider = faux()
    gate = anyio.Event()

    async def wait_for_gate(call_id: str, *_: Any) -> str:
        if call_id == "c1":
            await gate.wait()
        else:
            await anyio.sleep_forever()
        return "opened"

    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("gate", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message([faux_tool_call("gate", {}, id="c2")], stop_reason="toolUse"),
            faux_assistant_message("never"),
        ]
    )
    agent = make_agent(provider, tools=[make_tool("gate", wait_for_gate)])
    steered = anyio.Event()

    def listener(event: AgentEvent, _signal: AbortSignal) -> None:
        if event.type == "message_end" and event.message.role == "user" and steered.is_set():
            gate_for_second.set()

    gate_for_second = anyio.Event()
    agent.subscribe(listener)

    async def steerer() -> None:
        await anyio.wait_all_tasks_blocked()
        agent.steer("please also check the other one")
        steered.set()
        gate.set()

    async def aborter() -> None:
        await gate_for_second.wait()
        await anyio.wait_all_tasks_blocked()
        agent.abort()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(steerer)
            tg.start_soon(aborter)
            await agent.prompt("go")
    assert roles(agent) == [
        "system", "user", "assistant", "toolResult", "user", "assistant", "toolResult"
    ]  # fmt: skip
    assert agent.state.error_message == "Operation aborted"
    assert provider.call_count == 2


async def test_listener_failure_gets_the_full_lifecycle() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("fine")])
    agent = make_agent(provider)
    listener = Listener(agent)

    def failing(event: AgentEvent, _signal: AbortSignal) -> None:
        message = event.message if event.type == "message_end" else None
        if isinstance(message, AssistantMessage) and message.stop_reason == "stop":
            raise RuntimeError("listener exploded")

    agent.subscribe(failing)
    await agent.prompt("go")
    assert listener.types() == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    assert agent.state.error_message == "listener exploded"
    assert [getattr(m, "stop_reason", None) for m in agent.state.messages] == [
        None,
        "stop",
        "error",
    ]
    assert listener.events[-1].messages == [agent.state.messages[-1]]  # type: ignore[union-attr]


async def test_listener_failing_twice_on_agent_end_raises() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("fine")])
    agent = make_agent(provider)

    def failing(event: AgentEvent, _signal: AbortSignal) -> None:
        if event.type == "agent_end":
            raise RuntimeError("agent_end listener broke")

    agent.subscribe(failing)
    with pytest.raises(RuntimeError, match="agent_end listener broke"):
        await agent.prompt("go")
    assert not agent.state.is_streaming
    assert agent.signal is None


async def test_hook_failure_gets_the_upstream_lifecycle() -> None:
    def convert(_messages: Any) -> Any:
        raise RuntimeError("provider exploded")

    provider = faux()
    agent = make_agent(provider, convert_to_llm=convert)
    listener = Listener(agent)
    await agent.prompt("go")
    assert listener.types() == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    assert agent.state.error_message == "provider exploded"


async def test_an_agent_without_a_model_fails_its_first_prompt_saying_so() -> None:
    agent = Agent()
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    result = await agent.prompt("hello")
    assert result.error_message == "No model: give Agent(model=...)" == agent.state.error_message
    assert roles(agent) == ["user", "assistant"]
    check_event_grammar(events)
    assert [event.type for event in events][-4:] == [
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_a_stream_fn_of_its_own_needs_no_model() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("fine")])
    result = await Agent(stream_fn=provider.stream).prompt("hello")
    assert result.error_message is None and result.text == "fine"


def test_a_model_is_given_by_its_catalogue_name() -> None:
    agent = Agent(model="anthropic/claude-sonnet-4-5")
    assert agent.model is get_model("anthropic", "claude-sonnet-4-5") is agent.state.model
    agent.model = "google/gemini-2.5-flash"
    assert (agent.model.api, agent.model.id) == ("google-generative-ai", "gemini-2.5-flash")


def test_an_unknown_model_name_raises_where_it_is_given() -> None:
    with pytest.raises(ModelNotFoundError, match="did you mean 'claude-sonnet-4-5'"):
        Agent(model="anthropic/claude-sonet-4-5")
    agent = Agent(model="openai/gpt-4o-mini")
    with pytest.raises(ModelNotFoundError, match="did you mean 'openai/gpt-4o-mini'"):
        agent.model = "gpt-4o-mini"
    assert agent.model.id == "gpt-4o-mini"


async def test_subscribe_and_unsubscribe() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("x"), faux_assistant_message("y")])
    agent = make_agent(provider)
    seen: list[str] = []

    def listener(event: AgentEvent, _signal: AbortSignal) -> None:
        seen.append(event.type)

    unsubscribe = agent.subscribe(listener)
    agent.subscribe(listener)
    await agent.prompt("go")
    assert seen.count("agent_start") == 1
    assert unsubscribe() is True
    assert unsubscribe() is False
    await agent.prompt("again")
    assert seen.count("agent_start") == 1


async def test_state_copies_on_assignment_and_reset() -> None:
    tools = [make_tool("t")]
    agent = Agent(tools=tools)
    assert agent.state.tools == tools
    assert agent.state.tools is not tools
    messages: list[Any] = [UserMessage("a")]
    agent.state.messages = messages
    assert agent.state.messages is not messages
    agent.state.messages.append(UserMessage("b"))
    assert len(agent.messages) == 2
    agent.steer("x")
    agent.reset()
    assert agent.state.messages == []
    assert not agent.has_queued_messages()


async def test_wait_for_idle() -> None:
    stream = BlockingStream()
    agent = Agent(model=Model("m"), stream_fn=stream)
    await agent.wait_for_idle()
    idle = anyio.Event()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "go")

            async def waiter() -> None:
                await agent.wait_for_idle()
                idle.set()

            await stream.started.wait()
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert not idle.is_set()
            agent.abort()
    assert idle.is_set()


async def test_options_reach_the_stream_function() -> None:
    seen: list[StreamOptions] = []

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        from pi_core import StreamDone

        seen.append(options)
        yield StreamDone("stop", AssistantMessage([], "a", "p", model.id))

    agent = Agent(
        model=Model("m"),
        stream_fn=stream,
        thinking_level="high",
        session_id="s1",
        options=StreamOptions(temperature=0.5),
        get_api_key=lambda _provider: "key",
    )
    await agent.prompt("go")
    agent.thinking_level = "off"
    await agent.prompt("go")
    assert [(o.reasoning, o.session_id, o.temperature, o.api_key) for o in seen] == [
        ("high", "s1", 0.5, "key"),
        (None, "s1", 0.5, "key"),
    ]
    assert seen[0].signal is not None


async def test_tool_results_and_transcript_with_parallel_tools() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("t", {}, id="a"), faux_tool_call("t", {}, id="b")],
                stop_reason="toolUse",
            ),
            faux_assistant_message("done"),
        ]
    )
    agent = make_agent(provider, tools=[make_tool("t")])
    await agent.prompt("go")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["a", "b"]


def test_agent_rejects_bad_options() -> None:
    with pytest.raises(ValueError, match="tool_execution"):
        Agent(tool_execution="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="queue mode"):
        Agent(follow_up_mode="many")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value"),
    [("max_parallel_tools", 0), ("max_parallel_tools", "2"), ("tool_execution", "both")],
)
def test_a_bad_setting_is_a_value_error_wherever_it_is_set(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name):
        Agent(**{name: value})
    agent = Agent()
    before = getattr(agent, name)
    with pytest.raises(ValueError, match=name):
        setattr(agent, name, value)
    assert getattr(agent, name) == before


async def test_settings_assigned_after_construction_drive_the_next_run() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("t", {}, id="a"), faux_tool_call("t", {}, id="b")],
                stop_reason="toolUse",
            ),
            faux_assistant_message("done"),
        ]
    )
    agent = make_agent(provider, tools=[make_tool("t")])
    blocked: list[str] = []

    def before(context: BeforeToolCallContext, signal: AbortSignal) -> BeforeToolCallResult:
        blocked.append(context.tool_call.id)
        return BeforeToolCallResult(block=True, reason="not now")

    agent.before_tool_call = before
    agent.tool_execution = "sequential"
    agent.max_parallel_tools = 1
    await agent.prompt("go")
    assert (agent.before_tool_call, agent.tool_execution, agent.max_parallel_tools) == (
        before,
        "sequential",
        1,
    )
    assert blocked == ["a", "b"]
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.is_error, r.content) for r in results] == [(True, [TextContent("not now")])] * 2
