"""The turn hooks and tool rules of pi-agent-core 1.6.0, replayed as event timelines.

Each timeline is the one the real 1.6.0 Agent printed for the same scenario (a scripted stream
function, hooks that note when they run); where pi_core keeps its own rule (an aborted run makes
no further request), the test says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio
import pytest

from pi_core import (
    AbortSignal,
    AfterToolCallContext,
    Agent,
    AgentEvent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    BeforeToolCallContext,
    Context,
    Model,
    NextTurn,
    RequestContext,
    RequestUpdate,
    StopReason,
    StreamDone,
    StreamError,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResultMessage,
    TurnContext,
    TurnDecision,
    UserMessage,
)
from pi_core.testing import check_event_grammar

pytestmark = pytest.mark.anyio

MODEL = Model("mock", api="openai-responses", provider="openai", reasoning=True)
TRUNCATED = (
    'Tool call "t1" was not executed: the response hit the output token limit, so its '
    "arguments may be truncated. Re-issue the tool call with complete arguments."
)


def reply(text: str = "", stop_reason: StopReason = "stop", **fields: Any) -> AssistantMessage:
    content: list[Any] = [TextContent(text)] if text else []
    return AssistantMessage(
        content, MODEL.api, MODEL.provider, MODEL.id, stop_reason=stop_reason, **fields
    )


def calls(*names: str, stop_reason: str = "toolUse") -> AssistantMessage:
    blocks: list[Any] = [ToolCall(name[1], name, {"v": name[1]}) for name in names]
    return AssistantMessage(blocks, MODEL.api, MODEL.provider, MODEL.id, stop_reason=stop_reason)  # type: ignore[arg-type]


class Timeline:
    """One scenario's timeline: the scripted model's calls, the hooks' notes and the events."""

    def __init__(self, replies: Sequence[AssistantMessage]) -> None:
        self.lines: list[str] = []
        self._replies = list(replies)
        self.calls = 0

    def note(self, line: str) -> None:
        self.lines.append(line)

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        roles = "".join(message.role[0] for message in context.messages)
        self.note(f"LLM#{self.calls}(model={model.id},reasoning={options.reasoning},msgs={roles})")
        final = self._replies[self.calls] if self.calls < len(self._replies) else reply("extra")
        self.calls += 1
        if final.stop_reason == "error":
            yield StreamError("error", final)
        else:
            yield StreamDone(final.stop_reason, final)  # type: ignore[arg-type]

    def listen(self, event: AgentEvent) -> None:
        line: str = event.type
        message = getattr(event, "message", None)
        if message is not None:
            stop = getattr(message, "stop_reason", None)
            line += f"({message.role}{':' + stop if stop else ''})"
        if isinstance(event, ToolExecutionStart):
            line += f"({event.tool_call_id})"
        elif isinstance(event, ToolExecutionEnd):
            line += f"({event.tool_call_id}{':err' if event.is_error else ':ok'})"
        self.lines.append(line)

    def agent(self, **options: Any) -> Agent:
        agent = Agent(model=MODEL, thinking_level="high", stream_fn=self.stream, **options)
        events: list[AgentEvent] = []
        agent.subscribe(events.append)
        agent.subscribe(self.listen)
        self.events = events
        return agent


async def drive(agent: Agent, prompt: str = "hi") -> None:
    with anyio.fail_after(10):
        await agent.prompt(prompt)


def lines(text: str) -> list[str]:
    return text.split()


# --- finish_turn ----------------------------------------------------------------------------------


async def test_finish_turn_continue_makes_one_more_request_without_tools() -> None:
    timeline = Timeline([reply("a1"), reply("a2")])

    def finish_turn(turn: TurnContext, _signal: AbortSignal) -> TurnDecision | None:
        timeline.note(f"finishTurn({turn.message.stop_reason})")
        replies = [m for m in turn.new_messages if isinstance(m, AssistantMessage)]
        return TurnDecision("continue") if len(replies) < 2 else None

    await drive(timeline.agent(finish_turn=finish_turn))
    assert timeline.lines == lines("""
        agent_start turn_start message_start(user) message_end(user)
        LLM#0(model=mock,reasoning=high,msgs=u)
        message_start(assistant:stop) message_end(assistant:stop) finishTurn(stop)
        turn_end(assistant:stop) turn_start
        LLM#1(model=mock,reasoning=high,msgs=ua)
        message_start(assistant:stop) message_end(assistant:stop) finishTurn(stop)
        turn_end(assistant:stop) agent_end
    """)
    check_event_grammar(timeline.events)


async def test_finish_turn_end_keeps_the_queued_follow_up() -> None:
    timeline = Timeline([reply("a1"), reply("a2")])

    async def finish_turn(turn: TurnContext, _signal: AbortSignal) -> TurnDecision:
        timeline.note(f"finishTurn({turn.message.stop_reason})")
        return TurnDecision("end")

    agent = timeline.agent(finish_turn=finish_turn)
    agent.follow_up(UserMessage("later"))
    await drive(agent)
    assert timeline.lines == lines("""
        agent_start turn_start message_start(user) message_end(user)
        LLM#0(model=mock,reasoning=high,msgs=u)
        message_start(assistant:stop) message_end(assistant:stop) finishTurn(stop)
        turn_end(assistant:stop) agent_end
    """)
    assert agent.has_queued_messages()


async def test_finish_turn_sees_an_error_turn_and_cannot_continue_it() -> None:
    timeline = Timeline([reply("", "error", error_message="boom")])

    def finish_turn(turn: TurnContext, _signal: AbortSignal) -> TurnDecision:
        timeline.note(f"finishTurn({turn.message.stop_reason})")
        assert turn.tool_results == [] and turn.new_messages[-1] is turn.message
        return TurnDecision("continue")

    await drive(timeline.agent(finish_turn=finish_turn))
    assert timeline.lines == lines("""
        agent_start turn_start message_start(user) message_end(user)
        LLM#0(model=mock,reasoning=high,msgs=u)
        message_start(assistant:error) message_end(assistant:error) finishTurn(error)
        turn_end(assistant:error) agent_end
    """)


async def test_finish_turn_continue_is_no_extra_request_when_tools_lead_to_one() -> None:
    timeline = Timeline([calls("t1"), reply("done")])
    decisions: list[str] = []

    def finish_turn(turn: TurnContext, _signal: AbortSignal) -> TurnDecision:
        decisions.append(turn.message.stop_reason)
        return TurnDecision("continue") if turn.message.stop_reason == "toolUse" else None  # type: ignore[return-value]

    await drive(timeline.agent(finish_turn=finish_turn, tools=[noting_tool("t1", [])]))
    assert timeline.calls == 2
    assert decisions == ["toolUse", "stop"]


async def test_a_decision_of_another_type_counts_as_none() -> None:
    timeline = Timeline([reply("a1")])
    await drive(timeline.agent(finish_turn=lambda _turn, _signal: "end"))
    assert timeline.calls == 1
    with pytest.raises(ValueError, match="'continue' or 'end'"):
        TurnDecision("stop")  # type: ignore[arg-type]


# --- prepare_request and prepare_next_turn --------------------------------------------------------


async def test_prepare_request_and_prepare_next_turn_with_steering() -> None:
    timeline = Timeline([reply("a1"), reply("a2"), reply("a3")])

    def prepare_request(request: RequestContext, _signal: AbortSignal) -> RequestUpdate:
        roles = "".join(message.role[0] for message in request.context.messages)
        timeline.note(f"prepareRequest(thinking={request.thinking_level},msgs={roles})")
        return RequestUpdate(thinking_level="low")

    async def prepare_next_turn(turn: TurnContext) -> NextTurn:
        timeline.note(f"prepareNextTurn(last={turn.message.content[0].text})")  # type: ignore[union-attr]
        return NextTurn(messages=[UserMessage("injected")])

    agent = timeline.agent(prepare_request=prepare_request, prepare_next_turn=prepare_next_turn)
    agent.steer(UserMessage("steer1"))
    agent.steer(UserMessage("steer2"))
    await drive(agent)
    assert timeline.lines == lines("""
        agent_start turn_start message_start(user) message_end(user)
        message_start(user) message_end(user)
        prepareRequest(thinking=high,msgs=uu)
        LLM#0(model=mock,reasoning=low,msgs=uu)
        message_start(assistant:stop) message_end(assistant:stop) turn_end(assistant:stop)
        prepareNextTurn(last=a1) turn_start
        message_start(user) message_end(user) message_start(user) message_end(user)
        prepareRequest(thinking=low,msgs=uuauu)
        LLM#1(model=mock,reasoning=low,msgs=uuauu)
        message_start(assistant:stop) message_end(assistant:stop) turn_end(assistant:stop)
        agent_end
    """)
    texts = [
        m.content if isinstance(m.content, str) else m.content[0].text  # type: ignore[union-attr]
        for m in agent.state.messages
        if isinstance(m, UserMessage)
    ]
    assert texts == ["hi", "steer1", "injected", "steer2"]  # prepared before steering
    replies = [m for m in agent.state.messages if isinstance(m, AssistantMessage)]
    assert [m.thinking_level for m in replies] == ["low", "low"]


async def test_prepare_next_turn_is_not_called_after_the_last_turn() -> None:
    timeline = Timeline([calls("t1"), reply("done")])
    seen: list[str] = []

    def prepare_next_turn(turn: TurnContext) -> None:
        seen.append(turn.message.stop_reason)

    await drive(timeline.agent(prepare_next_turn=prepare_next_turn, tools=[noting_tool("t1", [])]))
    assert seen == ["toolUse"]


async def test_steering_queued_while_the_next_turn_is_prepared_is_picked_up() -> None:
    timeline = Timeline([calls("t1"), reply("done")])
    agent: Agent

    def prepare_next_turn(_turn: TurnContext) -> None:
        agent.steer(UserMessage("typed while compacting"))

    agent = timeline.agent(prepare_next_turn=prepare_next_turn, tools=[noting_tool("t1", [])])
    await drive(agent)
    assert "LLM#1(model=mock,reasoning=high,msgs=suatu)" in timeline.lines


async def test_prepare_request_can_replace_the_model_of_every_later_request() -> None:
    timeline = Timeline([calls("t1"), reply("done")])
    other = Model("other", api="openai-responses", provider="openai")
    seen: list[str] = []

    def prepare_request(request: RequestContext, _signal: AbortSignal) -> RequestUpdate | None:
        seen.append(request.model.id)
        return RequestUpdate(model=other) if request.model is MODEL else None

    await drive(timeline.agent(prepare_request=prepare_request, tools=[noting_tool("t1", [])]))
    assert seen == ["mock", "other"]
    assert [line.split(",")[0] for line in timeline.lines if line.startswith("LLM")] == [
        "LLM#0(model=other",
        "LLM#1(model=other",
    ]


async def test_should_stop_after_turn_keeps_its_place_after_turn_end() -> None:
    timeline = Timeline([calls("t1"), reply("done")])

    def should_stop(turn: TurnContext) -> bool:
        timeline.note("shouldStop")
        return True

    def finish_turn(turn: TurnContext, _signal: AbortSignal) -> None:
        timeline.note("finishTurn")

    agent = timeline.agent(
        should_stop_after_turn=should_stop, finish_turn=finish_turn, tools=[noting_tool("t1", [])]
    )
    await drive(agent)
    assert timeline.lines[-4:] == [
        "finishTurn",
        "turn_end(assistant:toolUse)",
        "shouldStop",
        "agent_end",
    ]
    assert timeline.calls == 1


# --- tools ----------------------------------------------------------------------------------------


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"v": {"type": "string"}},
    "required": ["v"],
}
"""The parameters of the timelines' tools (``calls`` gives each its ``v``)."""


def noting_tool(
    name: str,
    executed: list[str],
    returns: Callable[[], object] | None = None,
    *,
    on_execute: Callable[[], object] | None = None,
) -> AgentTool:
    async def execute(
        tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any
    ) -> object:
        executed.append(name)
        if on_execute is not None:
            on_execute()
            await anyio.sleep_forever()  # an abort cuts it
        return returns() if returns is not None else f"{name} done"

    return AgentTool(name, f"{name} tool", SCHEMA, execute)


def result_lines(agent: Agent) -> list[str]:
    return [
        f"{m.tool_call_id}:{'ERR' if m.is_error else 'ok'}:{m.content[0].text}"  # type: ignore[union-attr]
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_a_length_stopped_reply_runs_none_of_its_calls() -> None:
    timeline = Timeline([calls("t1", stop_reason="length"), reply("after")])
    executed: list[str] = []
    agent = timeline.agent(tools=[noting_tool("t1", executed)])
    await drive(agent, "go")
    assert timeline.lines == lines("""
        agent_start turn_start message_start(user) message_end(user)
        LLM#0(model=mock,reasoning=high,msgs=su)
        message_start(assistant:length) message_end(assistant:length)
        tool_execution_start(1) tool_execution_end(1:err)
        message_start(toolResult) message_end(toolResult) turn_end(assistant:length)
        turn_start LLM#1(model=mock,reasoning=high,msgs=suat)
        message_start(assistant:stop) message_end(assistant:stop) turn_end(assistant:stop)
        agent_end
    """)
    assert executed == []
    assert result_lines(agent) == [f"1:ERR:{TRUNCATED}"]
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.duration_ms is None


async def test_a_tool_can_fail_without_raising() -> None:
    timeline = Timeline([calls("t1"), reply("after")])
    executed: list[str] = []
    failing = AgentToolResult([TextContent("bad")], {"x": 1}, is_error=True)
    agent = timeline.agent(tools=[noting_tool("t1", executed, lambda: failing)])
    await drive(agent, "go")
    [end] = [e for e in timeline.events if isinstance(e, ToolExecutionEnd)]
    assert end.is_error and end.result is failing
    assert end.duration_ms is not None and end.duration_ms >= 0
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and result.details == {"x": 1}
    assert result.duration_ms == end.duration_ms
    assert executed == ["t1"] and timeline.calls == 2


@pytest.mark.parametrize("tool_execution", ["parallel", "sequential"])
async def test_an_update_after_the_call_settled_is_ignored(tool_execution: str) -> None:
    timeline = Timeline([calls("t1", "t2"), reply("after")])
    kept: list[Any] = []
    t1_ended = anyio.Event()

    async def early(_id: str, _params: Any, _signal: AbortSignal, on_update: Any) -> str:
        on_update(AgentToolResult([TextContent("working")]))
        kept.append(on_update)
        return "t1 done"

    async def late(_id: str, _params: Any, _signal: AbortSignal, _on_update: Any) -> str:
        await t1_ended.wait()
        kept[0](AgentToolResult([TextContent("too late")]))  # t1's, after its end
        return "t2 done"

    tools = [AgentTool("t1", "", SCHEMA, early), AgentTool("t2", "", SCHEMA, late)]

    def after(context: AfterToolCallContext, _signal: AbortSignal) -> None:  # t1 settled, not ended
        if context.tool_call.id == "1":
            kept[0](AgentToolResult([TextContent("settled")]))

    agent = timeline.agent(tools=tools, tool_execution=tool_execution, after_tool_call=after)
    agent.subscribe(lambda e: t1_ended.set() if isinstance(e, ToolExecutionEnd) else None)
    await drive(agent, "go")
    updates = [e for e in timeline.events if isinstance(e, ToolExecutionUpdate)]
    assert [u.partial_result.content for u in updates] == [[TextContent("working")]]
    check_event_grammar(timeline.events)


async def test_replies_carry_their_duration_and_the_level_asked_for() -> None:
    timeline = Timeline([calls("t1"), reply("after")])
    agent = timeline.agent(tools=[noting_tool("t1", [])])
    await drive(agent, "go")
    replies = [m for m in agent.state.messages if isinstance(m, AssistantMessage)]
    assert [m.thinking_level for m in replies] == ["high", "high"]
    assert all(m.duration_ms is not None and m.duration_ms >= 0 for m in replies)
    agent.thinking_level = "off"
    await drive(agent, "again")
    assert agent.state.messages[-1].thinking_level == "off"  # type: ignore[union-attr]


async def test_arguments_that_were_not_an_object_fail_validation() -> None:
    broken = ToolCall("a", "t1", {}, arguments_error="Unexpected token 'x'")
    message = AssistantMessage([broken], MODEL.api, MODEL.provider, MODEL.id, stop_reason="toolUse")
    timeline = Timeline([message, reply("after")])
    executed: list[str] = []
    agent = timeline.agent(tools=[noting_tool("t1", executed)])
    await drive(agent, "go")
    assert executed == []
    assert result_lines(agent) == ["a:ERR:Invalid arguments for tool \"t1\": Unexpected token 'x'"]


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
async def test_calls_not_started_when_an_abort_lands_are_answered_without_running(
    mode: str,
) -> None:
    # 1.6.0 lets the aborting call finish and then requests once more with the aborted signal;
    # pi_core cuts the running call and makes no further request. Calls behind it never run.
    # A parallel batch runs one call at a time here: trio starts unlimited tasks in any order.
    timeline = Timeline([calls("t1", "t2", "t3"), reply("after")])
    executed: list[str] = []
    agent: Agent
    tools = [noting_tool("t1", executed, on_execute=lambda: agent.abort())]
    tools += [noting_tool(name, executed) for name in ("t2", "t3")]
    agent = timeline.agent(tools=tools, tool_execution=mode, max_parallel_tools=1)
    await drive(agent, "go")
    assert executed == ["t1"]
    assert result_lines(agent) == [f"{n}:ERR:Operation aborted" for n in "123"]
    assert timeline.calls == 1
    assert timeline.lines[-2:] == ["turn_end(assistant:toolUse)", "agent_end"]
    check_event_grammar(timeline.events)


async def test_an_abort_in_before_tool_call_answers_the_batch_without_running_it() -> None:
    timeline = Timeline([calls("t1", "t2"), reply("after")])
    executed: list[str] = []
    agent: Agent

    def before(context: BeforeToolCallContext, _signal: AbortSignal) -> None:
        executed.append(f"before:{context.tool_call.id}")
        if context.tool_call.id == "1":
            agent.abort()

    tools = [noting_tool(name, executed) for name in ("t1", "t2")]
    agent = timeline.agent(tools=tools, before_tool_call=before)
    await drive(agent, "go")
    assert executed == ["before:1"]
    assert result_lines(agent) == ["1:ERR:Operation aborted", "2:ERR:Operation aborted"]
    tool_events = [line for line in timeline.lines if line.startswith("tool_execution")]
    assert tool_events == [
        "tool_execution_start(1)",
        "tool_execution_end(1:err)",
        "tool_execution_start(2)",
        "tool_execution_end(2:err)",
    ]


# --- a thrown failure -----------------------------------------------------------------------------


async def test_a_throwing_stream_function_ends_with_the_error_reply() -> None:
    def exploding(_model: Model, _context: Context, _options: StreamOptions) -> Any:
        raise RuntimeError("provider exploded")

    timeline = Timeline([])
    agent = timeline.agent()
    agent.stream_fn = exploding
    await drive(agent)
    assert timeline.lines == lines("""
        agent_start turn_start message_start(user) message_end(user)
        message_start(assistant:error) message_end(assistant:error)
        turn_end(assistant:error) agent_end
    """)
    assert agent.state.error_message == "provider exploded"


async def test_a_hook_that_raises_gets_the_full_lifecycle() -> None:
    timeline = Timeline([reply("a1")])

    def prepare_request(_request: RequestContext, _signal: AbortSignal) -> None:
        raise RuntimeError("hook exploded")

    agent = timeline.agent(prepare_request=prepare_request)
    await drive(agent)
    assert timeline.lines == lines("""
        agent_start turn_start message_start(user) message_end(user)
        message_start(assistant:error) message_end(assistant:error)
        turn_end(assistant:error) agent_end
    """)
    assert agent.state.error_message == "hook exploded"
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    check_event_grammar(timeline.events)


async def test_a_tool_replaced_in_place_between_turns_is_the_one_that_runs() -> None:
    # A run keeps one tool batch for all its turns: it must notice a changed tool list.
    timeline = Timeline([calls("t1"), calls("t1"), reply("done")])
    executed: list[str] = []
    replacement = noting_tool("t1", executed, lambda: "second")

    def prepare_next_turn(turn: TurnContext) -> None:
        turn.context.tools[0] = replacement  # the same name and schema, another object

    agent = timeline.agent(
        prepare_next_turn=prepare_next_turn, tools=[noting_tool("t1", executed, lambda: "first")]
    )
    await drive(agent, "go")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [m.content[0].text for m in results] == ["first", "second"]  # type: ignore[union-attr]
