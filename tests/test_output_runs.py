"""Typed output through whole runs, faux-scripted: the Agent and the loop functions asking for an
answer of a type, its retries, the forced last retry, limits, sub-agents, tracing and aborts."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import attrs
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pi_core import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AssistantMessageEvent,
    Context,
    Model,
    OutputError,
    OutputSpec,
    RunError,
    RunLimits,
    RunOutcome,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    agent_tool,
    current_tools,
    partial_output,
    run_agent_loop,
    tool,
)
from pi_core.testing import ScriptedStream, check_event_grammar, scripted_reply
from pi_core.tracing import instrument

pytestmark = pytest.mark.anyio

BOUND = 10.0
NUDGE = "Respond by calling the final_result tool."


@attrs.frozen
class Invoice:
    """An invoice, as read from a document."""

    number: str
    total: float
    lines: list[str] = attrs.Factory(list)


@dataclasses.dataclass(frozen=True)
class City:
    name: str
    population: int


def output_call(arguments: dict[str, Any], call_id: str = "out") -> ToolCall:
    return ToolCall(call_id, "final_result", arguments)


def answer(arguments: dict[str, Any], call_id: str = "out") -> Any:
    return scripted_reply(output_call(arguments, call_id))


class RecordingStream(ScriptedStream):
    """A scripted model that also keeps the options of every call (the tool choice of each)."""

    def __init__(self, *replies: Any, **options: Any) -> None:
        super().__init__(replies, **options)
        self.options: list[StreamOptions | None] = []

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.options.append(options)
        return super().__call__(model, context, options)

    @property
    def tool_choices(self) -> list[Any]:
        return [None if o is None else o.tool_choice for o in self.options]


def agent_on(
    stream: ScriptedStream, events: list[AgentEvent] | None = None, **options: Any
) -> Agent:
    agent = Agent(model=stream.model, stream_fn=stream, **options)
    if events is not None:
        agent.subscribe(events.append)
    return agent


def texts(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def results(messages: Any) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


async def test_a_valid_first_answer_is_the_output_and_ends_the_run_after_its_batch() -> None:
    stream = RecordingStream(answer({"number": "INV-1", "total": "12.5", "lines": "tea"}))
    events: list[AgentEvent] = []
    agent = agent_on(stream, events, output_type=Invoice)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Read the invoice.")
    assert result.ok and result.outcome is RunOutcome.DONE
    assert result.output == Invoice("INV-1", 12.5, ["tea"])  # coerced as tool arguments are
    assert stream.calls == 1
    # The run declares its output tool in a system message, before the prompt.
    [offered] = [t for t in current_tools(stream.contexts[0].messages) if t.name == "final_result"]
    assert offered.parameters["required"] == ["number", "total"]
    assert offered.description == "An invoice, as read from a document."
    [processed] = results(result.messages)
    assert (texts(processed), processed.is_error) == ("Final result processed.", False)
    assert processed.details == {"number": "INV-1", "total": 12.5, "lines": ["tea"]}
    assert stream.tool_choices == [None]
    check_event_grammar(events)
    assert agent.tools == []  # the output tool is the run's, not the Agent's


async def test_an_invalid_answer_is_the_tools_error_result_and_the_model_tries_again() -> None:
    stream = ScriptedStream(
        [answer({"number": "INV-2", "total": "lots"}), answer({"number": "INV-2", "total": 3})]
    )
    agent = agent_on(stream, output_type=Invoice)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Read it.")
    assert result.output == Invoice("INV-2", 3.0)
    assert stream.calls == 2
    seen = stream.contexts[1].messages[-1]  # what the model read before its second answer
    assert isinstance(seen, ToolResultMessage) and seen.is_error
    assert texts(seen).startswith(
        'Validation failed for tool "final_result":\n  - total: expected number, got string'
    )


async def test_a_reply_without_the_call_gets_one_user_message_and_the_call_comes_next() -> None:
    stream = RecordingStream(
        scripted_reply("It is Lisbon."), answer({"name": "Lisbon", "population": "545000"})
    )
    events: list[AgentEvent] = []
    agent = agent_on(stream, events, output_type=City)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Which city?")
    assert result.output == City("Lisbon", 545000)
    nudge = stream.contexts[1].messages[-1]
    assert isinstance(nudge, UserMessage) and texts(nudge) == NUDGE
    assert [m.role for m in result.messages] == [
        "system", "user", "assistant", "user", "assistant", "toolResult",
    ]  # fmt: skip
    check_event_grammar(events)
    # Two retries: the first retry is not forced, only the last would be.
    assert stream.tool_choices == [None, None]


async def test_spent_retries_fail_the_run_with_output_error_and_keep_its_messages() -> None:
    stream = RecordingStream(
        scripted_reply("No."),
        answer({"number": 1}),
        scripted_reply("Still no."),
    )
    events: list[AgentEvent] = []
    agent = agent_on(stream, events, output_type=Invoice)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Read it.")
    assert not result.ok and result.outcome is RunOutcome.ERROR and result.output is None
    assert result.error_message == (
        "Output failed after 2 retries: the reply did not call the final_result tool"
    )
    assert agent.state.error_message == result.error_message
    with pytest.raises(OutputError) as raised:
        result.raise_for_error()
    assert isinstance(raised.value, RunError) and raised.value.result is result
    # The replies, the nudges and the error result stay; the failure closes the transcript.
    roles = [m.role for m in result.messages]
    assert roles == [
        "system",  # the output tool's declaration
        "user",
        "assistant",
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "assistant",
    ]
    assert stream.calls == 3
    check_event_grammar(events)
    # The transcript can go on: a later run answers.
    stream.replies.append(answer({"number": "7", "total": 1}))
    with anyio.fail_after(BOUND):
        again = await agent.prompt("Try once more.")
    assert again.output == Invoice("7", 1.0)


async def test_the_last_retry_forces_the_output_tool() -> None:
    stream = RecordingStream(
        answer({"number": 1}),
        answer({"total": 1}),
        answer({"number": "3", "total": 3}),
    )
    agent = agent_on(stream, output_type=Invoice, output_retries=2)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Read it.")
    assert result.output == Invoice("3", 3.0)
    assert stream.tool_choices == [None, None, {"name": "final_result"}]


async def test_the_error_names_the_last_validation_failure() -> None:
    stream = RecordingStream(answer({"number": 1}), default=answer({"total": "x"}))
    agent = agent_on(stream, output_type=Invoice, output_retries=1)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Read it.")
    assert stream.tool_choices == [None, {"name": "final_result"}]
    assert result.error_message is not None
    assert result.error_message.startswith(
        'Output failed after 1 retries: Validation failed for tool "final_result":\n'
        "  - number: missing\n  - total: expected number, got string"
    )


async def test_no_retries_fail_at_the_first_miss() -> None:
    stream = RecordingStream(scripted_reply("plain text"))
    agent = agent_on(stream, output_type=int, output_retries=0)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("How many?")
    assert result.error_message == (
        "Output failed after 0 retries: the reply did not call the final_result tool"
    )
    assert stream.tool_choices == [None]


async def test_the_output_call_beside_other_calls_runs_the_whole_batch_then_ends() -> None:
    looked_up: list[str] = []

    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        looked_up.append(city)
        return f"{city}: 545000"

    reply = scripted_reply(
        ToolCall("t1", "lookup", {"city": "Lisbon"}),
        output_call({"name": "Lisbon", "population": 545000}),
        ToolCall("t2", "lookup", {"city": "Porto"}),
    )
    stream = ScriptedStream([reply])
    events: list[AgentEvent] = []
    agent = agent_on(stream, events, output_type=City, tools=[lookup])
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Which city?")
    assert result.output == City("Lisbon", 545000)
    assert sorted(looked_up) == ["Lisbon", "Porto"]  # a parallel batch
    assert [r.tool_name for r in results(result.messages)] == ["lookup", "final_result", "lookup"]
    assert stream.calls == 1  # no request after the batch
    check_event_grammar(events)


async def test_other_tool_calls_without_the_output_cost_no_retry() -> None:
    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        return "545000"

    stream = RecordingStream(
        scripted_reply(ToolCall("t1", "lookup", {"city": "Lisbon"})),
        scripted_reply(ToolCall("t2", "lookup", {"city": "Lisbon"})),
        answer({"name": "Lisbon", "population": 545000}),
    )
    agent = agent_on(stream, output_type=City, tools=[lookup], output_retries=0)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Which city?")
    assert result.output == City("Lisbon", 545000)
    assert stream.tool_choices == [None, None, None]


async def test_an_abort_while_the_output_streams_ends_the_run_aborted_without_output() -> None:
    arguments = {"number": "INV-9", "total": 99.5, "lines": ["a long line of the invoice"] * 3}
    # Event 0 is start, 1 the call's start, then one delta per 4 characters: block mid-way.
    stream = ScriptedStream([answer(arguments)], block_at=(0, 12), chunk_size=4)
    events: list[AgentEvent] = []
    agent = agent_on(stream, events, output_type=Invoice)
    partials: list[dict[str, Any]] = []
    agent.subscribe(lambda event: partials.append(p) if (p := partial_output(event)) else None)
    result: Any = None
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as group:

            async def run() -> None:
                nonlocal result
                result = await agent.prompt("Read it.")

            group.start_soon(run)
            await stream.wait_blocked()
            agent.abort()
    assert result.outcome is RunOutcome.ABORTED and result.output is None
    assert result.reply is not None and result.reply.stop_reason == "aborted"
    assert partials and partials[-1] != arguments  # it had begun, and not finished
    assert stream.open_streams == 0
    assert results(result.messages) == []
    check_event_grammar(events)


async def test_a_json_schema_dict_with_additional_properties_false_is_validated() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
        "additionalProperties": False,
    }
    stream = ScriptedStream(
        [
            answer({"city": "Lisbon", "population": 1, "country": "PT"}),
            answer({"city": "Lisbon", "population": "545000"}),
        ]
    )
    agent = agent_on(stream, output_type=schema)
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Which city?")
    assert result.output == {"city": "Lisbon", "population": 545000}
    refused = stream.contexts[1].messages[-1]
    assert isinstance(refused, ToolResultMessage) and refused.is_error
    assert "  - country: unknown field" in texts(refused)


async def test_a_per_run_output_type_replaces_the_agents_for_that_run() -> None:
    stream = ScriptedStream(
        [
            scripted_reply(output_call({"result": ["a", "b"]})),
            scripted_reply("plain again"),
            scripted_reply("plain"),
        ]
    )
    agent = agent_on(stream, output_type=Invoice)
    with anyio.fail_after(BOUND):
        listed = await agent.prompt("List them.", output_type=list[str])
        plain = await agent.prompt("Talk.", output_type=str)
        agent.output_type = None
        untyped = await agent.prompt("Talk.")
    assert listed.output == ["a", "b"]
    offered = current_tools(stream.contexts[0].messages)[-1]
    assert offered.parameters["required"] == ["result"]  # a list travels wrapped
    assert (plain.output, plain.text) == (None, "plain again")
    assert (untyped.output, untyped.text) == (None, "plain")
    assert [t.name for t in current_tools(stream.contexts[1].messages)] == []  # str: none
    with pytest.raises(TypeError):
        await agent.prompt("x", output_type=object)
    with pytest.raises(TypeError):
        agent.output_type = object
    with pytest.raises(ValueError, match="output_retries"):
        agent.output_retries = -1


async def test_retries_count_as_turns_against_the_limits() -> None:
    stream = ScriptedStream(
        [scripted_reply("one"), scripted_reply("two")],
        default=answer({"name": "x", "population": 1}),
    )
    agent = agent_on(stream, output_type=City, limits=RunLimits(max_turns=2))
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Which city?")
    assert result.outcome is RunOutcome.LIMIT and result.output is None
    assert result.stopped_by is not None and result.stopped_by.kind == "max_turns"
    assert stream.calls == 2


async def test_a_typed_sub_agent_answers_its_parent_with_json() -> None:
    child_stream = ScriptedStream([answer({"name": "Porto", "population": "232000"})])

    def child(_args: dict[str, Any]) -> Agent:
        return Agent(model=child_stream.model, stream_fn=child_stream, output_type=City)

    research = agent_tool(child, name="research", description="Find a city.")
    parent_stream = ScriptedStream(
        [
            scripted_reply(ToolCall("r1", "research", {"task": "the second city"})),
            scripted_reply("Porto it is."),
        ]
    )
    parent = agent_on(parent_stream, tools=[research])
    with anyio.fail_after(BOUND):
        result = await parent.prompt("Research.")
    [answered] = results(result.messages)
    assert json.loads(texts(answered)) == {"name": "Porto", "population": 232000}
    assert result.text == "Porto it is."


async def test_the_output_tool_gets_its_span_as_other_tools_do() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stream = ScriptedStream([scripted_reply("hm"), answer({"name": "Lisbon", "population": 1})])
    agent = agent_on(stream, output_type=City)
    instrument(agent, tracer_provider=provider)
    with anyio.fail_after(BOUND):
        await agent.prompt("Which city?")
    names = sorted(span.name for span in exporter.get_finished_spans())
    assert names == [
        "chat scripted-1",
        "chat scripted-1",
        "execute_tool final_result",
        "invoke_agent",
    ]


async def test_the_loop_functions_take_an_output_spec_and_raise_output_error() -> None:
    spec = OutputSpec.of(City, retries=1)
    assert spec is not None
    stream = ScriptedStream([scripted_reply("no"), scripted_reply("no")])
    config = AgentLoopConfig(stream.model, stream_fn=stream, output=spec)
    events: list[AgentEvent] = []
    with anyio.fail_after(BOUND), pytest.raises(OutputError) as raised:
        await run_agent_loop([UserMessage("Which city?")], AgentContext(), config, events.append)
    assert str(raised.value) == (
        "Output failed after 1 retries: the reply did not call the final_result tool"
    )
    failed = raised.value.result
    assert failed.output_failed and [m.role for m in failed.messages] == [
        "system", "user", "assistant", "user", "assistant",
    ]  # fmt: skip

    good = ScriptedStream([answer({"name": "Lisbon", "population": 1})])
    config = AgentLoopConfig(good.model, stream_fn=good, output=spec)
    with anyio.fail_after(BOUND):
        new = await run_agent_loop(
            [UserMessage("Which city?")], AgentContext(), config, events.append
        )
    assert spec.output_of(new) == City("Lisbon", 1)


async def test_a_tool_named_like_the_output_tool_is_refused() -> None:
    @tool
    def final_result(value: str) -> str:
        """Clashes."""
        return value

    stream = ScriptedStream([scripted_reply("x")])
    agent = agent_on(stream, output_type=City, tools=[final_result])
    with anyio.fail_after(BOUND):
        result = await agent.prompt("Which city?")
    assert result.error_message == "a tool named 'final_result' clashes with the output tool"
