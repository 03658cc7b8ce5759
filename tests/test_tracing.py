"""OpenTelemetry tracing: the span tree of runs, recorded by the SDK's in-memory exporter, on
asyncio and trio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from pi_core import (
    AbortController,
    AbortSignal,
    Agent,
    AgentEvent,
    AgentLoopConfig,
    AgentToolResult,
    AssistantMessageEvent,
    BeforeToolCallContext,
    BeforeToolCallResult,
    Context,
    Model,
    StreamOptions,
    ToolExecutionStart,
    Usage,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.tracing import instrument, instrument_config
from support import Recorder, make_tool

pytestmark = pytest.mark.anyio


class OrderLog(SpanProcessor):
    """Records the order in which spans start and end (``"+name"`` / ``"-name"``)."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        self.log.append(f"+{span.name}")

    def on_end(self, span: ReadableSpan) -> None:
        self.log.append(f"-{span.name}")


class Traces:
    """A tracer provider with an in-memory exporter, and questions about what it recorded."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.order = OrderLog()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.provider.add_span_processor(self.order)
        self.tracer = self.provider.get_tracer("tests")

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        [span] = [span for span in self.spans if span.name == name]
        return span

    def children(self, parent: ReadableSpan) -> list[str]:
        parent_id = parent.context.span_id
        return sorted(s.name for s in self.spans if s.parent and s.parent.span_id == parent_id)


@pytest.fixture
def traces() -> Traces:
    return Traces()


def faux_agent(provider: FauxProvider, **options: Any) -> Agent:
    return Agent(model=provider.get_model(), stream_fn=provider.stream, **options)


def parent_of(span: ReadableSpan, traces: Traces) -> str | None:
    if span.parent is None:
        return None
    [parent] = [s for s in traces.spans if s.context.span_id == span.parent.span_id]
    return parent.name


async def test_a_run_with_parallel_tools_is_one_tree_whose_tool_spans_overlap(
    traces: Traces,
) -> None:
    both_started = anyio.Event()
    started: list[str] = []

    async def meet(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        started.append(tool_call_id)
        if len(started) == 2:
            both_started.set()
        await both_started.wait()  # each call runs until the other has started too
        return "met"

    provider = FauxProvider()
    provider.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("meet", {}, id="a"), faux_tool_call("meet", {}, id="b")],
                stop_reason="toolUse",
            ),
            faux_assistant_message("done"),
        ]
    )
    agent = faux_agent(provider, tools=[make_tool("meet", meet)])
    instrument(agent, tracer_provider=traces.provider)
    with anyio.fail_after(10):
        await agent.prompt("go")

    run = traces.named("invoke_agent")
    assert run.parent is None and run.kind is SpanKind.INTERNAL
    assert run.status.status_code is StatusCode.UNSET
    assert "aborted" not in (run.attributes or {})
    assert traces.children(run) == [
        "chat faux-1",
        "chat faux-1",
        "execute_tool meet",
        "execute_tool meet",
    ]
    log = [entry for entry in traces.order.log if "execute_tool" in entry]
    assert log[:2] == ["+execute_tool meet", "+execute_tool meet"]  # both open at once
    chat = [s for s in traces.spans if s.name == "chat faux-1"]
    first = chat[0]
    assert first.kind is SpanKind.CLIENT
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "faux",
        "gen_ai.request.model": "faux-1",
        "gen_ai.response.model": "faux-1",
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.usage.input_tokens": first.attributes["gen_ai.usage.input_tokens"],  # type: ignore[index]
        "gen_ai.usage.output_tokens": first.attributes["gen_ai.usage.output_tokens"],  # type: ignore[index]
    }
    assert chat[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)  # type: ignore[index]
    tools = [s for s in traces.spans if s.name == "execute_tool meet"]
    assert sorted(str(s.attributes["gen_ai.tool.call.id"]) for s in tools) == ["a", "b"]  # type: ignore[index]
    assert all(s.attributes["gen_ai.tool.name"] == "meet" for s in tools)  # type: ignore[index]
    assert all(s.status.status_code is StatusCode.UNSET for s in tools)
    assert "gen_ai.tool.call.arguments" not in (tools[0].attributes or {})  # content is opt-in


async def test_usage_counts_cached_input_and_capture_content_records_messages(
    traces: Traces,
) -> None:
    reply = faux_assistant_message("hi there")
    reply.usage = Usage(input=10, output=4, cache_read=3, cache_write=2)
    reply.response_id = "resp-1"

    async def stream(model: Model, context: Context, options: StreamOptions) -> AsyncIterator[Any]:
        from pi_core import StreamDone

        yield StreamDone("stop", reply)

    config = AgentLoopConfig(model=Model("m-1", provider="acme"), stream_fn=stream)
    traced = instrument_config(config, tracer_provider=traces.provider, capture_content=True)
    assert config.tracer is None and traced.tracer is not None
    context_ = __import__("pi_core").AgentContext(system_prompt="Be brief.")
    await run_agent_loop([UserMessage("hello")], context_, traced, Recorder())
    chat = traces.named("chat m-1")
    attributes = chat.attributes or {}
    assert attributes["gen_ai.usage.input_tokens"] == 15
    assert attributes["gen_ai.usage.output_tokens"] == 4
    assert attributes["gen_ai.response.id"] == "resp-1"
    assert attributes["gen_ai.provider.name"] == "acme"
    assert attributes["gen_ai.system_instructions"] == '[{"type":"text","content":"Be brief."}]'
    assert attributes["gen_ai.input.messages"] == (
        '[{"role":"user","parts":[{"type":"text","content":"hello"}]}]'
    )
    assert attributes["gen_ai.output.messages"] == (
        '[{"role":"assistant","parts":[{"type":"text","content":"hi there"}],'
        '"finish_reason":"stop"}]'
    )


async def test_user_spans_in_a_tool_and_in_the_stream_function_nest_under_their_spans(
    traces: Traces,
) -> None:
    provider = FauxProvider()
    provider.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("query", {}, id="q1"), faux_tool_call("query", {}, id="q2")],
                stop_reason="toolUse",
            ),
            faux_assistant_message("done"),
        ]
    )

    async def query(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        await anyio.lowlevel.checkpoint()  # the span must survive a task switch
        with traces.tracer.start_as_current_span(f"db {tool_call_id}"):
            await anyio.lowlevel.checkpoint()
        return "rows"

    def stream(model: Model, context: Context, options: StreamOptions) -> Any:
        async def events() -> AsyncIterator[AssistantMessageEvent]:
            with traces.tracer.start_as_current_span("http POST"):
                async with aclosing(provider.stream(model, context, options)) as inner:  # type: ignore[type-var]
                    async for event in inner:
                        yield event

        return events()

    agent = Agent(model=provider.get_model(), stream_fn=stream, tools=[make_tool("query", query)])
    instrument(agent, tracer_provider=traces.provider)
    with traces.tracer.start_as_current_span("request"):  # the app's own span is the root
        await agent.prompt("go")
    assert parent_of(traces.named("invoke_agent"), traces) == "request"
    for call_id in ("q1", "q2"):
        db = traces.named(f"db {call_id}")
        [tool] = [
            s
            for s in traces.spans
            if s.name == "execute_tool query" and s.attributes["gen_ai.tool.call.id"] == call_id  # type: ignore[index]
        ]
        assert db.parent is not None and db.parent.span_id == tool.context.span_id
    http = [s for s in traces.spans if s.name == "http POST"]
    assert len(http) == 2 and {parent_of(s, traces) for s in http} == {"chat faux-1"}
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left attached


async def test_an_aborted_run_is_marked_aborted_and_its_tool_spans_end_in_error(
    traces: Traces,
) -> None:
    provider = FauxProvider()
    provider.set_responses(
        [faux_assistant_message([faux_tool_call("stuck", {}, id="s")], stop_reason="toolUse")]
    )

    async def stuck(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        await anyio.sleep_forever()
        return "never"

    agent = faux_agent(provider, tools=[make_tool("stuck", stuck)])
    instrument(agent, tracer_provider=traces.provider)

    def listener(event: AgentEvent, _signal: AbortSignal) -> None:
        if isinstance(event, ToolExecutionStart):
            agent.abort()

    agent.subscribe(listener)
    with anyio.fail_after(10):
        await agent.prompt("go")
    run = traces.named("invoke_agent")
    assert run.attributes["aborted"] is True  # type: ignore[index]
    tool = traces.named("execute_tool stuck")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.status.description == "Operation aborted"
    assert traces.children(run) == ["chat faux-1", "execute_tool stuck"]


async def test_an_abort_while_the_model_streams_ends_the_chat_span_with_the_run(
    traces: Traces,
) -> None:
    controller = AbortController()
    streaming = anyio.Event()

    async def stream(model: Model, context: Context, options: StreamOptions) -> AsyncIterator[Any]:
        streaming.set()
        await anyio.sleep_forever()
        yield  # pragma: no cover

    config = instrument_config(
        AgentLoopConfig(model=Model("m"), stream_fn=stream), tracer_provider=traces.provider
    )

    async def abort_when_streaming() -> None:
        await streaming.wait()
        controller.abort()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(abort_when_streaming)
            await run_agent_loop(
                [UserMessage("go")],
                __import__("pi_core").AgentContext(),
                config,
                Recorder(),
                signal=controller.signal,
            )
    chat = traces.named("chat m")
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("aborted",)  # type: ignore[index]
    assert chat.status.status_code is StatusCode.UNSET
    assert traces.named("invoke_agent").attributes["aborted"] is True  # type: ignore[index]


async def test_a_failed_model_call_sets_error_status_on_chat_and_run(traces: Traces) -> None:
    def broken(model: Model, context: Context, options: StreamOptions) -> Any:
        raise ConnectionError("connection refused")

    agent = Agent(model=Model("m", provider="p"), stream_fn=broken)
    instrument(agent, tracer_provider=traces.provider)
    await agent.prompt("go")
    chat = traces.named("chat m")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description == "connection refused"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("error",)  # type: ignore[index]
    run = traces.named("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "connection refused"


async def test_tool_errors_blocked_unknown_and_invalid_calls_end_in_error(
    traces: Traces,
) -> None:
    async def failing(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        raise RuntimeError("disk full")

    def block(context: BeforeToolCallContext, _signal: AbortSignal) -> BeforeToolCallResult | None:
        return BeforeToolCallResult(block=True) if context.tool_call.name == "guarded" else None

    provider = FauxProvider()
    provider.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("failing", {}, id="f"),
                    faux_tool_call("guarded", {}, id="g"),
                    faux_tool_call("missing", {}, id="m"),
                    faux_tool_call("typed", {"n": "x"}, id="t"),
                    faux_tool_call("fine", {}, id="ok"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("done"),
        ]
    )
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tools = [
        make_tool("failing", failing),
        make_tool("guarded"),
        make_tool("typed", parameters=schema),
        make_tool("fine"),
    ]
    agent = faux_agent(provider, tools=tools, before_tool_call=block)
    instrument(agent, tracer_provider=traces.provider)
    await agent.prompt("go")
    status = {
        s.attributes["gen_ai.tool.call.id"]: (s.status.status_code, s.status.description)  # type: ignore[index]
        for s in traces.spans
        if s.name.startswith("execute_tool")
    }
    assert status["f"] == (StatusCode.ERROR, "disk full")
    assert status["g"] == (StatusCode.ERROR, "Tool execution was blocked")
    assert status["m"] == (StatusCode.ERROR, "Tool missing not found")
    assert status["t"][0] is StatusCode.ERROR
    assert status["t"][1].startswith('Validation failed for tool "typed"')  # type: ignore[union-attr]
    assert status["ok"] == (StatusCode.UNSET, None)
    assert traces.named("invoke_agent").status.status_code is StatusCode.UNSET


async def test_a_hook_that_raises_ends_the_run_span_with_the_exception(traces: Traces) -> None:
    provider = FauxProvider()
    provider.set_responses([faux_assistant_message("hi")])

    def convert(messages: list[Any]) -> list[Any]:
        raise ValueError("bad history")

    config = instrument_config(
        AgentLoopConfig(
            model=provider.get_model(), stream_fn=provider.stream, convert_to_llm=convert
        ),
        tracer_provider=traces.provider,
    )
    with pytest.raises(ValueError, match="bad history"):
        await run_agent_loop(
            [UserMessage("go")], __import__("pi_core").AgentContext(), config, Recorder()
        )
    run = traces.named("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "bad history"
    assert [event.name for event in run.events] == ["exception"]
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_capture_content_records_tool_arguments_and_results(traces: Traces) -> None:
    async def shout(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([__import__("pi_core").TextContent(params["word"].upper())])

    schema = {"type": "object", "properties": {"word": {"type": "string"}}}
    provider = FauxProvider()
    provider.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("shout", {"word": "hey"}, id="s")], stop_reason="toolUse"
            ),
            faux_assistant_message("done"),
        ]
    )
    agent = faux_agent(provider, tools=[make_tool("shout", shout, parameters=schema)])
    instrument(agent, tracer_provider=traces.provider, capture_content=True)
    await agent.prompt("go")
    attributes = traces.named("execute_tool shout").attributes or {}
    assert attributes["gen_ai.tool.call.arguments"] == '{"word":"hey"}'
    assert attributes["gen_ai.tool.call.result"] == "HEY"
