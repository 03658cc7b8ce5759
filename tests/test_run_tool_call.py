"""``run_tool_call``: one call through lookup, validation, hooks and execution, no events."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from pi_core import (
    AbortController,
    AbortSignal,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    TextContent,
    ToolCall,
    ToolCallOutcome,
    run_tool_call,
)
from pi_core.lowlevel import run_tool_call as lowlevel_run_tool_call
from support import make_tool

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}


def reply(call: ToolCall) -> AssistantMessage:
    return AssistantMessage([call], "api", "provider", "model", stop_reason="toolUse")


async def run(call: ToolCall, *tools: Any, **options: Any) -> ToolCallOutcome:
    with anyio.fail_after(10):
        return await run_tool_call(
            call,
            tools=list(tools),
            assistant_message=reply(call),
            context=AgentContext(),
            **options,
        )


def text(outcome: ToolCallOutcome) -> str:
    return "".join(b.text for b in outcome.result.content if isinstance(b, TextContent))


async def test_a_call_runs_with_validated_arguments_and_its_duration() -> None:
    seen: list[Any] = []

    async def execute(_id: str, params: Any, _signal: AbortSignal, _update: Any) -> str:
        seen.append(params)
        return "ran"

    call = ToolCall("c1", "count", {"n": "3"})
    outcome = await run(call, make_tool("count", execute, parameters=SCHEMA))
    assert seen == [{"n": 3}]  # coerced as in a run
    assert (outcome.tool_call, outcome.is_error, text(outcome)) == (call, False, "ran")
    assert outcome.duration_ms is not None and outcome.duration_ms >= 0
    assert lowlevel_run_tool_call is run_tool_call


async def test_calls_that_do_not_run_are_error_results_without_a_duration() -> None:
    executed: list[str] = []

    async def execute(_id: str, _params: Any, _signal: AbortSignal, _update: Any) -> str:
        executed.append("ran")
        return "ran"

    tool = make_tool("count", execute, parameters=SCHEMA)
    unknown = await run(ToolCall("c1", "missing", {}), tool)
    invalid = await run(ToolCall("c2", "count", {"n": "many"}), tool)
    unreadable = await run(ToolCall("c3", "count", {}, arguments_error="Unexpected token"), tool)
    assert [o.is_error for o in (unknown, invalid, unreadable)] == [True, True, True]
    assert text(unknown) == "Tool missing not found"
    assert text(invalid).startswith('Validation failed for tool "count"')
    assert text(unreadable) == 'Invalid arguments for tool "count": Unexpected token'
    assert [o.duration_ms for o in (unknown, invalid, unreadable)] == [None, None, None]
    assert executed == []


async def test_a_raising_tool_is_an_error_result_and_nothing_is_raised() -> None:
    async def execute(_id: str, _params: Any, _signal: AbortSignal, _update: Any) -> str:
        raise RuntimeError("disk full")

    outcome = await run(ToolCall("c1", "save", {}), make_tool("save", execute))
    assert (outcome.is_error, text(outcome)) == (True, "disk full")
    assert outcome.duration_ms is not None


async def test_a_tool_may_fail_without_raising() -> None:
    failed = AgentToolResult([TextContent("not found")], {"code": 404}, is_error=True)

    async def execute(_id: str, _params: Any, _signal: AbortSignal, _update: Any) -> Any:
        return failed

    outcome = await run(ToolCall("c1", "get", {}), make_tool("get", execute))
    assert outcome.is_error and outcome.result is failed


async def test_hooks_block_and_amend_as_in_a_run() -> None:
    def before(context: BeforeToolCallContext, _signal: AbortSignal) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=context.tool_call.id == "c1", reason="not now")

    async def after(context: AfterToolCallContext, _signal: AbortSignal) -> AfterToolCallResult:
        return AfterToolCallResult(content=[TextContent(f"checked: {text_of(context.result)}")])

    tool = make_tool("echo")
    blocked = await run(ToolCall("c1", "echo", {}), tool, before_tool_call=before)
    amended = await run(
        ToolCall("c2", "echo", {}), tool, before_tool_call=before, after_tool_call=after
    )
    assert (blocked.is_error, text(blocked), blocked.duration_ms) == (True, "not now", None)
    assert (amended.is_error, text(amended)) == (False, "checked: echo done")
    assert amended.duration_ms is not None


def text_of(result: AgentToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_progress_reaches_on_update() -> None:
    async def execute(_id: str, _params: Any, _signal: AbortSignal, on_update: Any) -> str:
        on_update(AgentToolResult([TextContent("half")]))
        return "all"

    partials: list[AgentToolResult] = []
    outcome = await run(
        ToolCall("c1", "work", {}), make_tool("work", execute), on_update=partials.append
    )
    assert [text_of(p) for p in partials] == ["half"] and text(outcome) == "all"


async def test_an_abort_answers_the_call_operation_aborted() -> None:
    started = anyio.Event()
    executed: list[str] = []

    async def execute(_id: str, _params: Any, _signal: AbortSignal, _update: Any) -> str:
        executed.append("ran")
        started.set()
        await anyio.sleep_forever()
        return "never"

    tool = make_tool("wait", execute)
    controller = AbortController()
    outcomes: list[ToolCallOutcome] = []

    async def call_it() -> None:
        outcomes.append(await run(ToolCall("c1", "wait", {}), tool, signal=controller.signal))

    async with anyio.create_task_group() as group:
        group.start_soon(call_it)
        with anyio.fail_after(10):
            await started.wait()
        controller.abort()
    [cut] = outcomes
    assert (cut.is_error, text(cut)) == (True, "Operation aborted")
    # Already aborted: the call does not start.
    late = await run(ToolCall("c2", "wait", {}), tool, signal=controller.signal)
    assert (late.is_error, text(late), late.duration_ms) == (True, "Operation aborted", None)
    assert executed == ["ran"]


async def test_a_timeout_ends_the_call() -> None:
    async def execute(_id: str, _params: Any, _signal: AbortSignal, _update: Any) -> str:
        await anyio.sleep_forever()
        return "never"

    outcome = await run(ToolCall("c1", "slow", {}), make_tool("slow", execute, timeout=0.01))
    assert (outcome.is_error, text(outcome)) == (True, "Tool slow timed out after 0.01 s")
