"""Tool batches: parallel and sequential order, preflight, hooks, errors as data, terminate."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from pi_core import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ImageContent,
    MessageEnd,
    MessageStart,
    TextContent,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar, check_transcript
from support import Recorder, faux, make_tool

pytestmark = pytest.mark.anyio


def script(
    provider: FauxProvider, *calls: tuple[str, str, dict[str, Any]], then: str = "done"
) -> None:
    """One reply calling ``calls`` (name, id, arguments), then a text reply."""
    blocks = [faux_tool_call(name, args, id=call_id) for name, call_id, args in calls]
    provider.set_responses(
        [faux_assistant_message(blocks, stop_reason="toolUse"), faux_assistant_message(then)]
    )


async def run(
    tools: list[AgentTool], *calls: tuple[str, str, dict[str, Any]], **options: Any
) -> tuple[Recorder, list[Any], FauxProvider]:
    """Run the loop on one reply making ``calls``; ``on_event`` (if given) sees every event."""
    on_event = options.pop("on_event", None)
    provider = faux()
    script(provider, *calls)
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream, **options)
    recorder = Recorder()

    def emit(event: Any) -> None:
        recorder(event)
        if on_event is not None:
            on_event(event)

    with anyio.fail_after(10):
        new = await run_agent_loop([UserMessage("go")], AgentContext(tools=tools), config, emit)
    check_event_grammar(recorder.events)
    check_transcript(new)
    return recorder, new, provider


def tool_events(recorder: Recorder) -> list[tuple[str, str]]:
    """(kind, call id) for tool executions and toolResult messages, in emitted order."""
    out = []
    for event in recorder.events:
        if isinstance(event, (ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd)):
            out.append((event.type.removeprefix("tool_execution_"), event.tool_call_id))
        elif isinstance(event, (MessageStart, MessageEnd)) and isinstance(
            event.message, ToolResultMessage
        ):
            out.append((event.type, event.message.tool_call_id))
    return out


def results(new: list[Any]) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in new if isinstance(m, ToolResultMessage)}


def text_of(message: ToolResultMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


async def test_parallel_ends_follow_completion_and_results_follow_source_order() -> None:
    second_done = anyio.Event()

    async def first(*_: Any) -> str:
        await second_done.wait()
        return "first"

    async def second(*_: Any) -> str:
        second_done.set()
        return "second"

    recorder, new, _ = await run(
        [make_tool("first", first), make_tool("second", second)],
        ("first", "a", {}),
        ("second", "b", {}),
    )
    assert tool_events(recorder) == [
        ("start", "a"), ("start", "b"), ("end", "b"), ("end", "a"),
        ("message_start", "a"), ("message_end", "a"), ("message_start", "b"), ("message_end", "b"),
    ]  # fmt: skip
    assert [m.tool_call_id for m in new if isinstance(m, ToolResultMessage)] == ["a", "b"]
    turn_end = recorder.of_type("turn_end")[0]
    assert [r.tool_call_id for r in turn_end.tool_results] == ["a", "b"]


async def test_every_before_tool_call_runs_before_any_execute() -> None:
    log: list[str] = []

    def before(ctx: BeforeToolCallContext, _signal: Any) -> None:
        log.append(f"before {ctx.tool_call.id}")

    async def execute(call_id: str, *_: Any) -> str:
        log.append(f"execute {call_id}")
        return "ok"

    await run([make_tool("t", execute)], ("t", "a", {}), ("t", "b", {}), before_tool_call=before)
    assert log[:2] == ["before a", "before b"]
    assert sorted(log[2:]) == ["execute a", "execute b"]


async def test_sequential_mode_runs_one_call_after_another() -> None:
    recorder, _, _ = await run(
        [make_tool("t")], ("t", "a", {}), ("t", "b", {}), tool_execution="sequential"
    )
    assert tool_events(recorder) == [
        ("start", "a"), ("end", "a"), ("message_start", "a"), ("message_end", "a"),
        ("start", "b"), ("end", "b"), ("message_start", "b"), ("message_end", "b"),
    ]  # fmt: skip


async def test_one_sequential_tool_makes_the_batch_sequential() -> None:
    running = 0
    most = 0

    async def execute(*_: Any) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await anyio.lowlevel.checkpoint()
        running -= 1
        return "ok"

    tools = [make_tool("p", execute), make_tool("s", execute, execution_mode="sequential")]
    recorder, _, _ = await run(tools, ("p", "a", {}), ("s", "b", {}), ("p", "c", {}))
    assert most == 1
    assert [kind for kind, _ in tool_events(recorder)][:4] == [
        "start",
        "end",
        "message_start",
        "message_end",
    ]


async def test_parallel_tool_does_not_override_global_sequential() -> None:
    tools = [make_tool("p", execution_mode="parallel")]
    recorder, _, _ = await run(tools, ("p", "a", {}), ("p", "b", {}), tool_execution="sequential")
    assert [kind for kind, _ in tool_events(recorder)][:2] == ["start", "end"]


async def test_immediate_errors_end_during_preflight() -> None:
    release = anyio.Event()

    async def slow(*_: Any) -> str:
        await release.wait()
        return "slow"

    def on_event(event: Any) -> None:
        if event.type == "tool_execution_end" and event.tool_call_id == "b":
            release.set()

    recorder, new, _ = await run(
        [make_tool("slow", slow)], ("slow", "a", {}), ("nope", "b", {}), on_event=on_event
    )
    # "b" ends right away, before "a" (which waits for it) and before any result message.
    assert tool_events(recorder)[:4] == [("start", "a"), ("start", "b"), ("end", "b"), ("end", "a")]
    assert text_of(results(new)["b"]) == "Tool nope not found"
    assert results(new)["b"].is_error


async def test_errors_are_data_with_upstream_texts() -> None:
    async def raising(*_: Any) -> str:
        raise RuntimeError("kaput")

    def before(ctx: BeforeToolCallContext, _signal: Any) -> BeforeToolCallResult | None:
        if ctx.tool_call.name == "blocked":
            return BeforeToolCallResult(block=True)
        if ctx.tool_call.name == "reasoned":
            return BeforeToolCallResult(block=True, reason="not today")
        return None

    tools = [
        make_tool("raising", raising),
        make_tool("blocked"),
        make_tool("reasoned"),
        make_tool(
            "typed",
            parameters={
                "type": "object",
                "properties": {"value": {"type": "string"}},
                "required": ["value"],
            },
        ),
    ]
    _, new, provider = await run(
        tools,
        ("raising", "a", {}),
        ("blocked", "b", {}),
        ("reasoned", "c", {}),
        ("typed", "d", {"value": {"x": 1}}),
        ("missing", "e", {}),
        before_tool_call=before,
    )
    by_id = results(new)
    assert text_of(by_id["a"]) == "kaput"
    assert text_of(by_id["b"]) == "Tool execution was blocked"
    assert text_of(by_id["c"]) == "not today"
    assert text_of(by_id["d"]).startswith(
        'Validation failed for tool "typed":\n  - value: expected string, got object'
    )
    assert text_of(by_id["e"]) == "Tool missing not found"
    assert all(m.is_error for m in by_id.values())
    assert all(m.details == {} for m in by_id.values())
    assert provider.call_count == 2  # the loop goes on after errors


async def test_before_hook_sees_validated_args_that_execute_receives() -> None:
    received: list[Any] = []
    hooked: list[Any] = []

    async def execute(_id: str, params: Any, *_: Any) -> str:
        received.append(params)
        return "ok"

    def before(ctx: BeforeToolCallContext, _signal: Any) -> None:
        hooked.append(ctx.args)
        assert ctx.tool_call.arguments == {"n": "5"}  # the raw block
        ctx.args["added"] = True

    schema = {"type": "object", "properties": {"n": {"type": "number"}}}
    recorder, _, _ = await run(
        [make_tool("t", execute, parameters=schema)],
        ("t", "a", {"n": "5"}),
        before_tool_call=before,
    )
    assert received[0] is hooked[0]
    assert received[0] == {"n": 5, "added": True}
    start = recorder.of_type("tool_execution_start")[0]
    assert start.args == {"n": "5"}


async def test_prepare_arguments_runs_before_validation() -> None:
    received: list[Any] = []

    async def execute(_id: str, params: Any, *_: Any) -> str:
        received.append(params)
        return "ok"

    def prepare(raw: Any) -> Any:
        return {"name": raw.get("legacy_name", raw.get("name"))}

    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    tool = make_tool("t", execute, parameters=schema, prepare_arguments=prepare)
    await run([tool], ("t", "a", {"legacy_name": "x"}))
    assert received == [{"name": "x"}]


async def test_after_tool_call_merge_rules() -> None:
    async def execute(*_: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("original")], {"k": 1})

    def after(ctx: AfterToolCallContext, _signal: Any) -> AfterToolCallResult | None:
        assert ctx.result.content == [TextContent("original")]
        assert ctx.is_error is False
        overrides = {
            "a": AfterToolCallResult(content=[]),
            "b": AfterToolCallResult(details=None, is_error=True),
            "c": AfterToolCallResult(details={"k": 2}, terminate=False),
        }
        return overrides.get(ctx.tool_call.id)

    _, new, _ = await run(
        [make_tool("t", execute)],
        ("t", "a", {}),
        ("t", "b", {}),
        ("t", "c", {}),
        ("t", "d", {}),
        after_tool_call=after,
    )
    by_id = results(new)
    assert by_id["a"].content == []
    assert by_id["a"].details == {"k": 1}
    assert by_id["b"].is_error
    assert by_id["b"].content == [TextContent("original")]
    assert by_id["c"].details == {"k": 2}
    assert not by_id["d"].is_error


async def test_raising_after_hook_becomes_error_result() -> None:
    async def after(*_: Any) -> None:
        raise ValueError("after broke")

    _, new, _ = await run([make_tool("t")], ("t", "a", {}), after_tool_call=after)
    assert text_of(results(new)["a"]) == "after broke"
    assert results(new)["a"].is_error


async def test_string_result_is_shorthand_and_a_value_json_cannot_carry_is_an_error() -> None:
    async def wrong(*_: Any) -> Any:
        return object()

    _, new, _ = await run([make_tool("s"), make_tool("w", wrong)], ("s", "a", {}), ("w", "b", {}))
    assert results(new)["a"].content == [TextContent("s done")]
    assert text_of(results(new)["b"]).startswith(
        "Tool w returned object, which cannot be sent to the model as JSON"
    )
    assert results(new)["b"].is_error


async def test_images_in_results_reach_the_message() -> None:
    async def picture(*_: Any) -> AgentToolResult:
        return AgentToolResult([ImageContent("AAAA", "image/png")], details={"w": 1})

    _, new, _ = await run([make_tool("p", picture)], ("p", "a", {}))
    assert results(new)["a"].content == [ImageContent("AAAA", "image/png")]


@pytest.mark.parametrize(
    ("terminates", "expected_calls"),
    [((True, True), 1), ((True, False), 2)],
)
async def test_terminate_needs_every_result(
    terminates: tuple[bool, bool], expected_calls: int
) -> None:
    async def execute(call_id: str, *_: Any) -> AgentToolResult:
        index = "ab".index(call_id)
        return AgentToolResult([TextContent("x")], terminate=terminates[index])

    _, _, provider = await run([make_tool("t", execute)], ("t", "a", {}), ("t", "b", {}))
    assert provider.call_count == expected_calls


async def test_an_immediate_error_prevents_termination() -> None:
    async def execute(*_: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("x")], terminate=True)

    _, _, provider = await run([make_tool("t", execute)], ("t", "a", {}), ("nope", "b", {}))
    assert provider.call_count == 2


async def test_after_hook_can_set_terminate() -> None:
    def after(*_: Any) -> AfterToolCallResult:
        return AfterToolCallResult(terminate=True)

    recorder, _, provider = await run([make_tool("t")], ("t", "a", {}), after_tool_call=after)
    assert provider.call_count == 1
    end = recorder.of_type("tool_execution_end")[0]
    assert end.result.terminate is True


async def test_terminate_still_runs_queued_follow_ups() -> None:
    async def execute(*_: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("x")], terminate=True)

    follow_ups = [[UserMessage("more")], []]
    _, new, provider = await run(
        [make_tool("t", execute)],
        ("t", "a", {}),
        get_follow_up_messages=lambda: follow_ups.pop(0),
    )
    assert provider.call_count == 2
    assert [m.role for m in new] == [
        "system",
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
    ]


async def test_updates_never_block_the_tool_and_precede_its_end() -> None:
    tool_finished = anyio.Event()
    let_emits_go = anyio.Event()
    seen: list[tuple[str, bool]] = []

    async def chatty(_id: str, _params: Any, _signal: Any, on_update: Any) -> str:
        for n in range(3):
            on_update(AgentToolResult([TextContent(f"step {n}")]))
        tool_finished.set()
        return "done"

    async def emit(event: Any) -> None:
        if event.type == "tool_execution_update":
            seen.append((event.partial_result.content[0].text, tool_finished.is_set()))
            await let_emits_go.wait()
        elif event.type == "tool_execution_end":
            seen.append(("end", tool_finished.is_set()))

    async def releaser() -> None:
        await tool_finished.wait()
        let_emits_go.set()

    provider = faux()
    script(provider, ("chatty", "a", {}))
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(releaser)
            context = AgentContext(tools=[make_tool("chatty", chatty)])
            await run_agent_loop([UserMessage("go")], context, config, emit)
    # Each update's emit waits until the tool has finished: had on_update waited for its
    # emit, the run would deadlock (and fail_after would fire).
    assert seen == [("step 0", True), ("step 1", True), ("step 2", True), ("end", True)]


async def test_timeout_ends_the_call_and_siblings_keep_running() -> None:
    slow_ended = anyio.Event()

    async def slow(*_: Any) -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    async def sibling(*_: Any) -> str:
        await slow_ended.wait()
        return "sibling finished"

    def on_event(event: Any) -> None:
        if isinstance(event, ToolExecutionEnd) and event.tool_call_id == "a":
            slow_ended.set()

    tools = [make_tool("slow", slow, timeout=0.01), make_tool("sibling", sibling)]
    _, new, _ = await run(tools, ("slow", "a", {}), ("sibling", "b", {}), on_event=on_event)
    assert text_of(results(new)["a"]) == "Tool slow timed out after 0.01 s"
    assert results(new)["a"].is_error
    assert text_of(results(new)["b"]) == "sibling finished"


async def test_max_parallel_tools_caps_concurrent_executes() -> None:
    running = 0
    most = 0

    async def execute(*_: Any) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        for _step in range(5):
            await anyio.lowlevel.checkpoint()
        running -= 1
        return "ok"

    calls: list[tuple[str, str, dict[str, Any]]] = [("t", f"c{i}", {}) for i in range(6)]
    await run([make_tool("t", execute)], *calls, max_parallel_tools=2)
    assert most == 2


async def test_parallel_emits_are_serialized() -> None:
    inside = 0
    most = 0

    async def emit(event: Any) -> None:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        await anyio.lowlevel.checkpoint()
        inside -= 1

    async def chatty(_id: str, _p: Any, _s: Any, on_update: Any) -> str:
        for _tick in range(3):
            on_update(AgentToolResult([TextContent("tick")]))
            await anyio.lowlevel.checkpoint()
        return "ok"

    calls: list[tuple[str, str, dict[str, Any]]] = [("t", f"c{i}", {}) for i in range(5)]
    provider = faux()
    script(provider, *calls)
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    context = AgentContext(tools=[make_tool("t", chatty)])
    await run_agent_loop([UserMessage("go")], context, config, emit)
    assert most == 1


async def test_tool_results_reach_the_loop_context_after_the_whole_batch() -> None:
    contexts: list[list[str]] = []

    def before(ctx: BeforeToolCallContext, _signal: Any) -> None:
        contexts.append([m.role for m in ctx.context.messages])

    await run(
        [make_tool("t")],
        ("t", "a", {}),
        ("t", "b", {}),
        tool_execution="sequential",
        before_tool_call=before,
    )
    assert contexts == [["system", "user", "assistant"], ["system", "user", "assistant"]]
