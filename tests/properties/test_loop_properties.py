"""Properties of the loop over arbitrary scripted runs, on asyncio and trio.

Every run is ordered by release orders (see ``pi_core.testing.ToolScript``), never by sleeps;
the only wall time is the tiny timeout of the ``slow`` tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_core import (
    AbortController,
    AgentContext,
    AgentEvent,
    AssistantMessage,
    MessageEnd,
    TextContent,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolResultMessage,
    UserMessage,
    agent_loop,
)
from pi_core.testing import (
    CallOutcome,
    CallScript,
    RunRecord,
    RunScript,
    ScriptedRun,
    TurnScript,
    abort_points,
    check_event_grammar,
    check_transcript,
    scripted_runs,
)

pytestmark = pytest.mark.anyio

PROPERTY = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
ABORTED_TOOL_TEXT = "Operation aborted"
ABORTED_REQUEST_TEXT = "Request was aborted"
# Timeouts are the one thing that depends on the clock, and a capped batch lets the scheduler
# pick which calls start first: leave both out where the exact event sequence is compared.
REPEATABLE_OUTCOMES = [o for o in get_args(CallOutcome) if o not in ("timeout", "held")]


async def play(harness: ScriptedRun, abort_at: int | None = None) -> RunRecord:
    """Run the script; check what every run must satisfy, whatever happened in it."""
    tasks_before = {task.id for task in anyio.get_running_tasks()}
    with anyio.fail_after(10):
        record = await harness.run(abort_at=abort_at)
    check_event_grammar(record.events)
    check_transcript(record.messages)
    # Nothing of the run is left running: every tool call stopped (its finally ran), the model
    # stream was closed, and no task the run started is still alive.
    assert harness.tool_script.running == frozenset()
    assert harness.stream.open_streams == 0
    assert {task.id for task in anyio.get_running_tasks()} <= tasks_before
    return record


def text_of(content: Sequence[Any]) -> str:
    return "".join(block.text for block in content if isinstance(block, TextContent))


def expected_result(call: CallScript) -> tuple[str, bool]:
    """The text (a prefix for ``invalid``) and ``is_error`` the loop reports for a call."""
    tool = call.tool_name
    return {
        "succeed": (f"{tool} {call.id} ok", False),
        "terminate": (f"{tool} {call.id} ok", False),
        "fail": (f"{tool} {call.id} failed", True),
        "timeout": (f"Tool slow timed out after {ScriptedRun.tool_timeout:g} s", True),
        "unknown": ("Tool missing not found", True),
        "invalid": (f'Validation failed for tool "{tool}"', True),
        "blocked": (f"{call.id} is blocked", True),
    }[call.outcome]


def ends_of(record: RunRecord) -> dict[str, tuple[int, ToolExecutionEnd]]:
    return {
        event.tool_call_id: (index, event)
        for index, event in enumerate(record.events)
        if isinstance(event, ToolExecutionEnd)
    }


def turns_played(script: RunScript) -> list[TurnScript]:
    """The scripted turns a run without abort goes through (then the final text reply)."""
    played = []
    for turn in script.turns:
        played.append(turn)
        if turn.stop_reason == "error" or all(c.outcome == "terminate" for c in turn.calls):
            break
    return played


def signature(events: Sequence[AgentEvent]) -> list[tuple[Any, ...]]:
    """What must repeat exactly: types, tool call ids, roles, results."""
    rows: list[tuple[Any, ...]] = []
    for event in events:
        row: tuple[Any, ...] = (event.type,)
        if isinstance(event, ToolExecutionEnd):
            row += (event.tool_call_id, event.is_error, text_of(event.result.content))
        elif hasattr(event, "tool_call_id"):
            row += (event.tool_call_id,)
        elif hasattr(event, "message"):
            message = event.message
            row += (message.role, getattr(message, "tool_call_id", None))
        rows.append(row)
    return rows


# --- runs that are not aborted -----------------------------------------------------------------


@PROPERTY
@given(scripted_runs())
async def test_every_call_gets_its_scripted_result_and_the_turns_follow_the_script(
    script: RunScript,
) -> None:
    harness = ScriptedRun(script)
    record = await play(harness)
    played = turns_played(script)
    ends = ends_of(record)
    played_calls = [call for turn in played if turn.stop_reason != "error" for call in turn.calls]
    assert set(ends) == {call.id for call in played_calls}
    for call in played_calls:
        text, is_error = expected_result(call)
        _, end = ends[call.id]
        assert end.is_error is is_error
        assert text_of(end.result.content).startswith(text)
        updates = [e for e in record.events if getattr(e, "tool_call_id", None) == call.id]
        assert len(updates) - 2 == (call.updates if call.executes else 0)
    # After the scripted turns the model gives its final text reply, unless the run stopped.
    assert harness.stream.calls == len(played) + (0 if _stops(played[-1]) else 1)
    assert record.types.count("turn_start") == harness.stream.calls


def _stops(turn: TurnScript) -> bool:
    return turn.stop_reason == "error" or all(c.outcome == "terminate" for c in turn.calls)


@PROPERTY
@given(scripted_runs())
async def test_ends_follow_completion_and_results_follow_source_order(script: RunScript) -> None:
    harness = ScriptedRun(script)
    record = await play(harness)
    ends = ends_of(record)
    for turn in turns_played(script):
        executed = [call.id for call in turn.calls if call.executes and call.id in ends]
        completed = [cid for cid in harness.tool_script.finished if cid in executed]
        assert sorted(executed, key=lambda cid: ends[cid][0]) == completed
        # A call that fails preflight ends at once: its end follows its own start.
        for call in turn.calls:
            if call.id in ends and not call.executes:
                index, _ = ends[call.id]
                start = record.events[index - 1]
                assert (start.type, getattr(start, "tool_call_id", None)) == (
                    "tool_execution_start",
                    call.id,
                )
    results = [m.tool_call_id for m in record.messages if isinstance(m, ToolResultMessage)]
    assert results == [cid for cid in (call.id for call in script.calls) if cid in ends]


@PROPERTY
@given(scripted_runs())
async def test_sequential_batches_never_overlap_and_the_cap_is_never_exceeded(
    script: RunScript,
) -> None:
    harness = ScriptedRun(script)
    record = await play(harness)
    ends = ends_of(record)
    tools = harness.tool_script
    for turn in turns_played(script):
        executed = [call.id for call in turn.calls if call.executes and call.id in ends]
        if not executed:
            continue
        peak = tools.max_concurrency(executed)
        if script.is_sequential(turn):
            assert peak == 1
            # One call after another: start, updates, end, toolResult, then the next start.
            positions = [ends[cid][0] for cid in executed]
            starts = [
                i
                for i, e in enumerate(record.events)
                if isinstance(e, ToolExecutionStart) and e.tool_call_id in executed[1:]
            ]
            assert all(end < start for end, start in zip(positions[:-1], starts, strict=True))
        else:
            # The scripted tools wait until every call that may run has started, so a parallel
            # batch reaches exactly its capacity: that proves both the cap and the parallelism.
            # (A timeout may expire before a sibling starts, so it only bounds the peak.)
            capacity = min(script.max_parallel_tools or len(executed), len(executed))
            assert peak <= capacity
            if all(call.outcome != "timeout" for call in turn.calls):
                assert peak == capacity


@PROPERTY
@given(scripted_runs())
async def test_terminate_stops_the_run_only_by_unanimous_vote(script: RunScript) -> None:
    harness = ScriptedRun(script)
    record = await play(harness)
    turn_ends = [e for e in record.events if e.type == "turn_end"]
    for position, turn_end in enumerate(turn_ends):
        results = turn_end.tool_results
        if not results:
            continue
        ends = ends_of(record)
        votes = [ends[result.tool_call_id][1].result.terminate for result in results]
        last = position == len(turn_ends) - 1
        assert all(votes) == last, f"turn {position}: votes {votes}"
        turn = script.turns[position]
        assert all(votes) == all(call.outcome == "terminate" for call in turn.calls)


@PROPERTY
@given(scripted_runs(outcomes=REPEATABLE_OUTCOMES, max_parallel=None))
async def test_the_same_script_gives_the_same_events(script: RunScript) -> None:
    first = await play(ScriptedRun(script))
    second = await play(ScriptedRun(script))
    assert signature(second.events) == signature(first.events)
    # The event-stream form of the loop gives the same run too.
    harness = ScriptedRun(script)
    streamed: list[AgentEvent] = []
    with anyio.fail_after(10):
        context = AgentContext("You are scripted.", [], list(harness.tools))
        prompt = next(message for message in first.messages if message.role == "user")
        async with agent_loop([prompt], context, harness.loop_config()) as events:
            async for event in events:
                streamed.append(event)
    assert signature(streamed) == signature(first.events)


# --- aborts ------------------------------------------------------------------------------------


@PROPERTY
@given(scripted_runs(), abort_points())
async def test_an_abort_at_any_event_closes_the_run_out(script: RunScript, point: int) -> None:
    whole = await play(ScriptedRun(script))
    abort_at = point % len(whole.events)  # hypothesis cannot draw inside async tests (anyio)
    harness = ScriptedRun(script)
    record = await play(harness, abort_at)
    events = record.events
    assert record.abort_at == abort_at
    # No model call and no new turn after the abort (an abort during agent_start still gets
    # the first turn, to close it out).
    assert harness.stream.calls == record.llm_calls_at_abort
    assert record.types[abort_at + 1 :].count("turn_start") == (1 if abort_at == 0 else 0)
    check_streaming_close_out(record)
    check_batch_close_out(record, harness, script)
    assert events[-1].type == "agent_end"


def check_streaming_close_out(record: RunRecord) -> None:
    """A reply not complete when the abort comes ends as the aborted partial, then the run."""
    events, abort_at = record.events, record.abort_at
    assert abort_at is not None
    reply_ends = [
        (index, event.message)
        for index, event in enumerate(events)
        if index >= abort_at
        and isinstance(event, MessageEnd)
        and isinstance(event.message, AssistantMessage)
    ]
    if not reply_ends or reply_ends[0][0] == abort_at:
        return  # the abort came during a tool batch or after the reply: no reply to cut short
    end_index, message = reply_ends[0]
    assert (message.stop_reason, message.error_message) == ("aborted", ABORTED_REQUEST_TEXT), (
        f"abort at event {abort_at} ({events[abort_at].type}) while the reply streamed, "
        f"but the reply ended as {message.stop_reason!r}"
    )
    assert record.types[end_index:] == ["message_end", "turn_end", "agent_end"]
    assert "message_update" not in record.types[abort_at + 1 :]


def check_batch_close_out(record: RunRecord, harness: ScriptedRun, script: RunScript) -> None:
    """Calls that had not finished when the abort came end as ``Operation aborted``."""
    abort_at = record.abort_at
    assert abort_at is not None
    finishes = harness.tool_script.finishes
    by_id = {call.id: call for call in script.calls}
    for cid, (index, end) in ends_of(record).items():
        if index <= abort_at:
            continue
        how = finishes.get(cid)
        text = text_of(end.result.content)
        if how in ("returned", "raised"):  # it finished by itself before the abort reached it
            expected, is_error = expected_result(by_id[cid])
            assert text.startswith(expected) and end.is_error is is_error
        elif how == "cancelled" and by_id[cid].outcome == "timeout":  # a race with the abort
            assert text in (ABORTED_TOOL_TEXT, expected_result(by_id[cid])[0])
        else:
            assert (text, end.is_error) == (ABORTED_TOOL_TEXT, True), f"call {cid}"


@PROPERTY
@given(
    scripted_runs(max_turns=3, max_calls=4),
    abort_points(),
    st.sampled_from([0, 1, 64]),
    st.booleans(),
)
async def test_the_event_stream_form_closes_out_when_its_reader_aborts_or_leaves(
    script: RunScript, point: int, buffer_size: int, leave: bool
) -> None:
    # The reader acts where it has read to; the run may be up to buffer_size events ahead.
    harness = ScriptedRun(script)
    controller = AbortController()
    context = AgentContext("You are scripted.", [], list(harness.tools))
    tasks_before = {task.id for task in anyio.get_running_tasks()}
    read: list[AgentEvent] = []
    with anyio.fail_after(10):
        async with agent_loop(
            [UserMessage("Go.")],
            context,
            harness.loop_config(),
            signal=controller.signal,
            buffer_size=buffer_size,
        ) as events:
            async for event in events:
                read.append(event)
                if len(read) - 1 == point:
                    if leave:
                        break  # leaving the block cancels the run
                    controller.abort()
            new_messages = None if leave and len(read) - 1 == point else await events.result()
    if new_messages is not None:
        check_event_grammar(read)
        check_transcript(new_messages)
    assert harness.tool_script.running == frozenset()
    assert harness.stream.open_streams == 0
    assert {task.id for task in anyio.get_running_tasks()} <= tasks_before
