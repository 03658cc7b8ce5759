"""agent_tool: a child Agent runs inside a tool call, aborted, timed out and watched with it."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from pi_core import (
    Agent,
    AgentEvent,
    AgentTool,
    SubagentEvent,
    TextContent,
    ToolExecutionEnd,
    ToolExecutionUpdate,
    ToolResultMessage,
    agent_tool,
    serialization,
    tool,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

pytestmark = pytest.mark.anyio

BOUND = 10.0


def scripted(*replies: Any) -> FauxProvider:
    provider = FauxProvider(seed=1)
    provider.set_responses(list(replies))
    return provider


def calls(*pairs: tuple[str, dict[str, Any]]) -> Any:
    return faux_assistant_message(
        [faux_tool_call(name, args, id=f"{name}-{i}") for i, (name, args) in enumerate(pairs)],
        stop_reason="toolUse",
    )


def agent_on(provider: FauxProvider, *tools: AgentTool) -> Agent:
    return Agent(model=provider.get_model(), stream_fn=provider.stream, tools=tools)


def results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def text_of(message: ToolResultMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def child_events(events: list[AgentEvent]) -> list[tuple[tuple[str, ...], str]]:
    """The forwarded events as (path, type), in the order the parent saw them."""
    forwarded: list[tuple[tuple[str, ...], str]] = []
    for event in events:
        if isinstance(event, ToolExecutionUpdate):
            details = event.partial_result.details
            if isinstance(details, SubagentEvent):
                forwarded.append((details.path, details.event.type))
    return forwarded


async def test_the_child_answers_the_call_with_its_reply_and_its_messages() -> None:
    child_model = scripted(faux_assistant_message("Paris is sunny."))
    prompts: list[Any] = []

    def make_child(args: dict[str, Any]) -> Agent:
        prompts.append(args)
        return agent_on(child_model)

    research = agent_tool(make_child, name="research", description="Research a question.")
    parent = agent_on(
        scripted(calls(("research", {"task": "Weather in Paris?"})), faux_assistant_message("ok")),
        research,
    )
    result = await parent.prompt("go")
    assert result.ok
    [answer] = results(parent)
    assert not answer.is_error
    assert text_of(answer) == "Paris is sunny."
    assert prompts == [{"task": "Weather in Paris?"}]
    roles = [message.role for message in answer.details]
    assert roles == ["user", "assistant"]
    assert answer.details[0].content[0].text == "Weather in Paris?"


async def test_custom_parameters_make_the_prompt_the_arguments_as_json() -> None:
    seen: list[str] = []

    def make_child(_args: dict[str, Any]) -> Agent:
        child = agent_on(scripted(faux_assistant_message("done")))
        child.subscribe(
            lambda event: (
                seen.append(event.message.content[0].text)
                if event.type == "message_start" and event.message.role == "user"
                else None
            )
        )
        return child

    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    }
    forecast = agent_tool(make_child, name="forecast", description="d", parameters=schema)
    parent = agent_on(
        scripted(calls(("forecast", {"city": "Oslo", "days": 3})), faux_assistant_message("ok")),
        forecast,
    )
    await parent.prompt("go")
    assert seen == ['{"city": "Oslo", "days": 3}']


async def test_a_failed_child_gives_an_error_result_with_its_error_text() -> None:
    failing = scripted(faux_assistant_message("", stop_reason="error", error_message="quota gone"))
    research = agent_tool(lambda _a: agent_on(failing), name="research", description="d")
    parent = agent_on(
        scripted(calls(("research", {"task": "x"})), faux_assistant_message("ok")), research
    )
    await parent.prompt("go")
    [answer] = results(parent)
    assert answer.is_error
    assert text_of(answer) == "quota gone"


async def test_child_events_reach_the_parent_in_order_with_their_path() -> None:
    @tool
    async def lookup(q: str) -> str:
        """Look something up."""
        return q.upper()

    child_model = scripted(calls(("lookup", {"q": "a"})), faux_assistant_message("found"))
    research = agent_tool(
        lambda _a: agent_on(child_model, lookup), name="research", description="d"
    )
    parent = agent_on(
        scripted(calls(("research", {"task": "x"})), faux_assistant_message("ok")), research
    )
    events: list[AgentEvent] = []
    parent.subscribe(events.append)
    await parent.prompt("go")
    forwarded = child_events(events)
    assert {path for path, _ in forwarded} == {("research",)}
    types = [kind for _, kind in forwarded]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert types.index("tool_execution_start") < types.index("tool_execution_end")
    # Every forwarded event comes before the parent's call ends.
    end = next(i for i, e in enumerate(events) if isinstance(e, ToolExecutionEnd))
    last_update = max(i for i, e in enumerate(events) if isinstance(e, ToolExecutionUpdate))
    assert last_update < end


async def test_a_grandchild_three_levels_deep_keeps_its_full_path() -> None:
    def level(name: str, inner: AgentTool | None) -> AgentTool:
        def make(_args: dict[str, Any]) -> Agent:
            if inner is None:
                return agent_on(scripted(faux_assistant_message(f"{name} done")))
            replies = calls((inner.name, {"task": "deeper"})), faux_assistant_message(f"{name} ok")
            return agent_on(scripted(*replies), inner)

        return agent_tool(make, name=name, description="d")

    top = level("one", level("two", level("three", None)))
    parent = agent_on(scripted(calls(("one", {"task": "go"})), faux_assistant_message("ok")), top)
    events: list[AgentEvent] = []
    parent.subscribe(events.append)
    assert (await parent.prompt("go")).ok
    paths = {path for path, _ in child_events(events)}
    assert paths == {("one",), ("one", "two"), ("one", "two", "three")}
    assert text_of(results(parent)[0]) == "one ok"


async def test_nesting_deeper_than_the_guard_is_refused_with_an_error_result() -> None:
    def make(_args: dict[str, Any]) -> Agent:
        # Every level calls the same tool again: only the guard ends the recursion.
        return agent_on(
            scripted(calls(("dive", {"task": "again"})), faux_assistant_message("up")), dive
        )

    dive = agent_tool(make, name="dive", description="d", forward_events=False)
    parent = agent_on(scripted(calls(("dive", {"task": "go"})), faux_assistant_message("ok")), dive)
    assert (await parent.prompt("go")).ok
    # Walk down the details to the refused level.
    message = results(parent)[0]
    depth = 1
    while not message.is_error:
        message = next(m for m in message.details if isinstance(m, ToolResultMessage))
        depth += 1
    assert depth == 9
    assert "nest at most 8 deep" in text_of(message)


class Gate:
    """A child tool that signals when it runs and waits until the test lets it go."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()
        self.cancelled = 0

    def tool(self) -> AgentTool:
        @tool
        async def wait_here() -> str:
            """Wait for the gate."""
            self.entered.set()
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
            return "released"

        return wait_here


async def test_the_parents_abort_aborts_the_child_which_closes_out_first() -> None:
    gate = Gate()
    child_model = scripted(calls(("wait_here", {})), faux_assistant_message("never"))
    children: list[Agent] = []

    def make(_args: dict[str, Any]) -> Agent:
        children.append(agent_on(child_model, gate.tool()))
        return children[-1]

    research = agent_tool(make, name="research", description="d")
    parent = agent_on(scripted(calls(("research", {"task": "x"}))), research)
    events: list[AgentEvent] = []
    parent.subscribe(events.append)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(parent.prompt, "go")
            await gate.entered.wait()
            parent.abort()
    assert gate.cancelled == 1
    [answer] = results(parent)
    assert answer.is_error and text_of(answer) == "Operation aborted"
    [child] = children
    [child_answer] = results(child)
    assert child_answer.is_error and text_of(child_answer) == "Operation aborted"
    # The child's close-out (its agent_end) reached the parent before the parent's call ended.
    forwarded = [kind for _, kind in child_events(events)]
    assert forwarded[-1] == "agent_end"


async def test_the_tool_timeout_aborts_the_child_and_the_call_times_out() -> None:
    gate = Gate()
    child_model = scripted(calls(("wait_here", {})), faux_assistant_message("never"))
    research = attrs.evolve(
        agent_tool(lambda _a: agent_on(child_model, gate.tool()), name="research", description="d"),
        timeout=1.0,  # ample for the child to reach its tool, which then waits for ever
    )
    parent = agent_on(
        scripted(calls(("research", {"task": "x"})), faux_assistant_message("ok")), research
    )
    with anyio.fail_after(BOUND):
        result = await parent.prompt("go")
    assert result.ok
    [answer] = results(parent)
    assert answer.is_error and "timed out" in text_of(answer)
    # The child's tool was running when the timeout came, and the abort cancelled it.
    assert gate.entered.is_set() and gate.cancelled == 1


async def test_a_host_cancellation_aborts_the_child_and_propagates() -> None:
    gate = Gate()
    child_model = scripted(calls(("wait_here", {})), faux_assistant_message("never"))
    children: list[Agent] = []

    def make(_args: dict[str, Any]) -> Agent:
        children.append(agent_on(child_model, gate.tool()))
        return children[-1]

    parent = agent_on(
        scripted(calls(("research", {"task": "x"}))),
        agent_tool(make, name="research", description="d"),
    )
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(parent.prompt, "go")
            await gate.entered.wait()
            tg.cancel_scope.cancel()
    [child] = children
    assert child.state.is_streaming is False
    assert results(child) and text_of(results(child)[0]) == "Operation aborted"


async def test_two_children_in_one_batch_interleave_and_keep_their_own_order() -> None:
    gates = {"a": Gate(), "b": Gate()}

    def make(args: dict[str, Any]) -> Agent:
        gate = gates[args["task"]]
        return agent_on(
            scripted(calls(("wait_here", {})), faux_assistant_message("done")), gate.tool()
        )

    research = agent_tool(make, name="research", description="d")
    parent = agent_on(
        scripted(
            calls(("research", {"task": "a"}), ("research", {"task": "b"})),
            faux_assistant_message("ok"),
        ),
        research,
    )
    events: list[AgentEvent] = []
    parent.subscribe(events.append)

    async def release_b_then_a() -> None:
        await gates["a"].entered.wait()
        await gates["b"].entered.wait()
        gates["b"].release.set()
        gates["a"].release.set()

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(release_b_then_a)
            assert (await parent.prompt("go")).ok
    by_call: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, ToolExecutionUpdate) and isinstance(
            event.partial_result.details, SubagentEvent
        ):
            by_call.setdefault(event.tool_call_id, []).append(
                event.partial_result.details.event.type
            )
    assert set(by_call) == {"research-0", "research-1"}
    for kinds in by_call.values():
        assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert [text_of(m) for m in results(parent)] == ["done", "done"]


async def test_forwarded_events_serialize_as_json() -> None:
    child_model = scripted(faux_assistant_message("hi"))
    parent = agent_on(
        scripted(calls(("research", {"task": "x"})), faux_assistant_message("ok")),
        agent_tool(lambda _a: agent_on(child_model), name="research", description="d"),
    )
    events: list[AgentEvent] = []
    parent.subscribe(events.append)
    await parent.prompt("go")
    update = next(e for e in events if isinstance(e, ToolExecutionUpdate))
    data = serialization.to_dict(update)
    assert data["partialResult"]["details"]["path"] == ["research"]
    assert data["partialResult"]["details"]["event"]["type"] == "agent_start"
    # The transcript, with the child's messages in the result's details, saves as JSON.
    text = serialization.dumps(parent.state.messages)
    assert '"role": "assistant"' in text or '"role":"assistant"' in text


async def test_a_sub_agent_transcript_crosses_the_proxy_wire_unchanged() -> None:
    pytest.importorskip("starlette")  # the proxy server's request reader
    from pi_core import Context, StreamOptions, default_convert_to_llm
    from pi_core.proxy._request import parse_request
    from pi_core.proxy._wire import encode_request

    child_model = scripted(faux_assistant_message("hi"))
    parent = agent_on(
        scripted(calls(("research", {"task": "x"})), faux_assistant_message("ok")),
        agent_tool(lambda _a: agent_on(child_model), name="research", description="d"),
    )
    await parent.prompt("go")
    [answer] = results(parent)
    assert answer.details is not None  # the child's messages, its usage and nested calls
    context = Context(None, default_convert_to_llm(parent.state.messages))
    for wire in ("1.6", "0.73"):
        body = encode_request(parent.model, context, StreamOptions(), wire=wire)
        received = await parse_request(body)
        [crossed] = [m for m in received.context.messages if isinstance(m, ToolResultMessage)]
        assert serialization.to_dict(crossed) == serialization.to_dict(answer)


async def test_a_child_with_tools_from_a_real_mcp_server_tears_down_cleanly_on_abort() -> None:
    import sys
    from contextlib import asynccontextmanager
    from pathlib import Path

    from pi_core.mcp import StdioServer, mcp_tools

    server = StdioServer(
        sys.executable, [str(Path(__file__).parent / "mcp" / "mcp_test_server.py")]
    )
    sessions: list[str] = []

    @asynccontextmanager
    async def researcher(_args: dict[str, Any]) -> Any:
        # One MCP session per call, opened and closed inside the call's task.
        try:
            async with mcp_tools(server) as tools:
                sessions.append("open")
                replies = calls(("slow", {})), faux_assistant_message("never")
                yield agent_on(scripted(*replies), *tools)
        finally:
            sessions.append("closed")

    parent = agent_on(
        scripted(calls(("research", {"task": "x"})), faux_assistant_message("after")),
        agent_tool(researcher, name="research", description="d"),
    )

    def abort_on_progress(event: AgentEvent) -> None:
        # The child's MCP call reported progress: the server is inside it.
        if isinstance(event, ToolExecutionUpdate):
            details = event.partial_result.details
            if isinstance(details, SubagentEvent) and details.event.type == "tool_execution_update":
                parent.abort()

    parent.subscribe(abort_on_progress)
    with anyio.fail_after(60):
        result = await parent.prompt("go")
    assert result.outcome == "aborted"
    assert sessions == ["open", "closed"]
    [answer] = results(parent)
    assert text_of(answer) == "Operation aborted"
    assert child_processes() == []  # the server process is gone


def child_processes() -> list[int]:
    """The pids of this process's living children (Linux)."""
    import os

    found: list[int] = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as children:
            found += [int(pid) for pid in children.read().split()]
    return found


async def test_the_childs_spans_nest_under_the_parents_execute_tool_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from pi_core.tracing import instrument

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def make(_args: dict[str, Any]) -> Agent:
        child = agent_on(scripted(faux_assistant_message("child says hi")))
        instrument(child, tracer_provider=provider)
        return child

    parent = agent_on(
        scripted(calls(("research", {"task": "x"})), faux_assistant_message("ok")),
        agent_tool(make, name="research", description="d"),
    )
    instrument(parent, tracer_provider=provider)
    await parent.prompt("go")
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}

    def parent_of(span: Any) -> Any:
        return by_id[span.parent.span_id] if span.parent is not None else None

    [tool_span] = [s for s in spans if s.name == "execute_tool research"]
    agent_spans = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(agent_spans) == 2
    [child_span] = [s for s in agent_spans if s.parent is not None]
    assert child_span.parent is not None and tool_span.context is not None
    assert child_span.parent.span_id == tool_span.context.span_id
    # The child's model call sits under the child's run span, and nowhere else.
    chats = [s for s in spans if s.name.startswith("chat")]
    assert sorted(parent_of(s) is child_span for s in chats) == [False, False, True]


def test_the_record_of_a_childs_calls_is_bounded_and_says_what_is_missing() -> None:
    from pi_core import AgentMessage, AssistantMessage, ToolCall
    from pi_core._subagent import MAX_NESTED_ARGUMENTS_BYTES, nested_calls_of

    big = {"text": "x" * MAX_NESTED_ARGUMENTS_BYTES}
    reply = AssistantMessage(
        [
            ToolCall("a", "ok_tool", {"q": 1}),
            ToolCall("b", "bad_tool", {}),
            ToolCall("c", "big", big),
        ],
        "faux",
        "faux",
        "m",
        stop_reason="toolUse",
    )
    messages: list[AgentMessage] = [
        reply,
        ToolResultMessage("a", "ok_tool", [TextContent("fine")], duration_ms=3.5),
        ToolResultMessage("b", "bad_tool", [TextContent("it broke")], is_error=True),
    ]
    record = nested_calls_of(messages)
    assert record == {
        "calls": [
            {
                "id": "a",
                "name": "ok_tool",
                "arguments": {"q": 1},
                "status": "ok",
                "durationMs": 3.5,
            },
            {
                "id": "b",
                "name": "bad_tool",
                "arguments": {},
                "status": "error",
                "error": "it broke",
            },
            {
                "id": "c",
                "name": "big",
                "argumentsBytes": MAX_NESTED_ARGUMENTS_BYTES + 11,
                "status": "unfinished",
            },
        ],
        "complete": False,
    }
    assert nested_calls_of(messages[:1] + messages[1:2])["complete"] is False  # type: ignore[index]
    assert nested_calls_of([AssistantMessage([], "f", "f", "m")]) is None
