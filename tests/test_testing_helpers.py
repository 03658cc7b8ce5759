"""pi_core.testing itself: the grammar and transcript checks, the scripted model and tools, the
run harness and the strategies."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any, get_args

import anyio
import pytest
from hypothesis import given

from pi_core import (
    AbortController,
    Agent,
    AgentContext,
    AgentEnd,
    AgentEvent,
    AgentLoopConfig,
    AgentStart,
    AgentToolResult,
    AssistantMessage,
    Context,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    Model,
    StreamDone,
    StreamError,
    StreamStart,
    TextContent,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResultMessage,
    TurnEnd,
    TurnStart,
    UserMessage,
    run_agent_loop,
)
from pi_core._texts import install_hint
from pi_core.serialization import dumps, loads
from pi_core.testing import (
    CallBehaviour,
    CallOutcome,
    CallScript,
    EventGrammarError,
    Injection,
    ReleaseBatch,
    RunScript,
    ScriptedRun,
    ScriptedStream,
    ToolScript,
    TranscriptError,
    TurnScript,
    abort_points,
    check_event_grammar,
    check_transcript,
    injections,
    scripted_reply,
    scripted_runs,
)

pytestmark = pytest.mark.anyio

# --- check_event_grammar ------------------------------------------------------------------------


def canonical_run() -> list[Any]:
    """A well-formed run: a prompt, a reply calling a and b (b ends first), then a final reply.

    0 agent_start, 1 turn_start, 2-3 user, 4-6 assistant (one update), 7 start a, 8 start b,
    9 update b, 10 end b, 11 end a, 12-13 result a, 14-15 result b, 16 turn_end,
    17 turn_start, 18-19 final reply, 20 turn_end, 21 agent_end.
    """
    prompt = UserMessage("go")
    reply = scripted_reply(ToolCall("a", "t", {}), ToolCall("b", "t", {}))
    done = AgentToolResult([TextContent("ok")])
    result_a = ToolResultMessage("a", "t", [TextContent("ok")])
    result_b = ToolResultMessage("b", "t", [TextContent("ok")])
    final = scripted_reply("done")
    return [
        AgentStart(),
        TurnStart(),
        MessageStart(prompt),
        MessageEnd(prompt),
        MessageStart(reply),
        MessageUpdate(reply, StreamStart(reply)),
        MessageEnd(reply),
        ToolExecutionStart("a", "t", {}),
        ToolExecutionStart("b", "t", {}),
        ToolExecutionUpdate("b", "t", {}, done),
        ToolExecutionEnd("b", "t", done, False),
        ToolExecutionEnd("a", "t", done, False),
        MessageStart(result_a),
        MessageEnd(result_a),
        MessageStart(result_b),
        MessageEnd(result_b),
        TurnEnd(reply, [result_a, result_b]),
        TurnStart(),
        MessageStart(final),
        MessageEnd(final),
        TurnEnd(final, []),
        AgentEnd([prompt, reply, result_a, result_b, final]),
    ]


def test_the_canonical_run_is_well_formed() -> None:
    check_event_grammar(canonical_run())


def without(*indexes: int) -> list[Any]:
    return [event for i, event in enumerate(canonical_run()) if i not in indexes]


def with_inserted(index: int, event: Any) -> list[Any]:
    events = canonical_run()
    events.insert(index, event)
    return events


def swapped(first: slice, second: slice) -> list[Any]:
    events = canonical_run()
    a, b = events[first], events[second]
    events[first.start : second.stop] = b + events[first.stop : second.start] + a
    return events


def replaced(index: int, make: Callable[[list[Any]], Any]) -> list[Any]:
    events = canonical_run()
    events[index] = make(events)
    return events


UPDATE = AgentToolResult([TextContent("50%")])

REJECTED: list[tuple[str, list[Any], str]] = [
    ("empty", [], "event 0: expected agent_start, found the end"),
    ("no agent_start", without(0), "event 0: expected agent_start, found turn_start"),
    ("missing agent_end", without(21), "event 21: expected agent_end, found the end"),
    (
        "events after agent_end",
        [*canonical_run(), TurnStart()],
        "event 22: expected nothing after agent_end, found turn_start",
    ),
    (
        "second agent_start",
        with_inserted(1, AgentStart()),
        "event 1: expected one agent_start only, found agent_start",
    ),
    (
        "message outside a turn",
        without(1),
        "event 1: expected turn_start before message_start, found message_start(user)",
    ),
    (
        "missing message_end",
        without(6),
        "event 6: expected message_end of the open assistant message before "
        "tool_execution_start, found tool_execution_start('a')",
    ),
    (
        "update outside a message",
        with_inserted(7, MessageUpdate(scripted_reply("x"), StreamStart(scripted_reply("x")))),
        "event 7: expected message_update only inside an assistant message, "
        "found message_update(assistant)",
    ),
    (
        "update of a user message",
        with_inserted(3, MessageUpdate(UserMessage("go"), StreamStart(scripted_reply("x")))),  # type: ignore[arg-type]
        "event 3: expected message_update only inside an assistant message, "
        "found message_update(user)",
    ),
    (
        "user message_end of another message",
        replaced(3, lambda _: MessageEnd(UserMessage("gone"))),
        "event 3: expected message_end carrying the same message as its message_start, "
        "found message_end(user)",
    ),
    (
        "missing tool_execution_end",
        without(11),
        "event 11: expected tool_execution_end('a') before its toolResult message, "
        "found message_start(toolResult 'a')",
    ),
    (
        "results out of order",
        swapped(slice(12, 14), slice(14, 16)),
        "event 12: expected the toolResult message of 'a' (source order), "
        "found message_start(toolResult 'b')",
    ),
    (
        "update after the end",
        with_inserted(11, ToolExecutionUpdate("b", "t", {}, UPDATE)),
        "event 11: expected tool_execution_update only between tool_execution_start and _end "
        "of 'b', found tool_execution_update('b')",
    ),
    (
        "tool started before its assistant message",
        with_inserted(2, ToolExecutionStart("a", "t", {})),
        "event 2: expected the turn's assistant message before tool_execution_start, "
        "found tool_execution_start('a')",
    ),
    (
        "tool call that is not in the reply",
        with_inserted(7, ToolExecutionStart("zz", "t", {})),
        "event 7: expected tool_execution_start of one of the calls ['a', 'b'], "
        "found tool_execution_start('zz')",
    ),
    (
        "end naming another tool",
        replaced(10, lambda e: ToolExecutionEnd("b", "other", e[10].result, False)),
        "event 10: expected tool_execution_end naming the tool 't' of its start, "
        "found tool_execution_end('b')",
    ),
    (
        "a call never started",
        without(8, 9, 10, 14, 15),
        "event 11: expected tool_execution_start('b') before turn_end, found turn_end",
    ),
    (
        "turn_end with other results",
        replaced(16, lambda e: TurnEnd(e[16].message, list(reversed(e[16].tool_results)))),
        "event 16: expected turn_end.tool_results to be the turn's toolResult messages "
        "['a', 'b'], found turn_end",
    ),
    (
        "turn_end carrying another message",
        replaced(20, lambda _: TurnEnd(scripted_reply("other"), [])),
        "event 20: expected turn_end carrying the turn's assistant message, found turn_end",
    ),
    (
        "two assistant messages in a turn",
        with_inserted(7, MessageStart(scripted_reply("again"))),
        "event 7: expected one assistant message per turn, found message_start(assistant)",
    ),
    (
        "agent_end inside a turn",
        without(20),
        "event 20: expected turn_end before agent_end, found agent_end",
    ),
    (
        "agent_end with a message of no event",
        replaced(21, lambda _: AgentEnd([UserMessage("never sent")])),
        "event 21: expected agent_end.messages to be messages ended in this run, in order, "
        "found agent_end",
    ),
    (
        "not an agent event",
        with_inserted(2, object()),
        "event 2: expected an agent event, found <object object at",
    ),
]


@pytest.mark.parametrize(
    ("events", "message"),
    [pytest.param(events, message, id=name) for name, events, message in REJECTED],
)
def test_malformed_runs_are_rejected_with_the_place_and_the_reason(
    events: list[Any], message: str
) -> None:
    with pytest.raises(EventGrammarError, match="^" + re.escape(message)):
        check_event_grammar(events)


async def test_an_agent_failure_lifecycle_is_accepted_wherever_it_strikes() -> None:
    # The listener raises on the tool's progress update: the Agent cancels the tool, closes the
    # run with its failure message, and the started tool call never gets its end.
    model = ScriptedStream([scripted_reply(ToolCall("a", "t", {}))])
    tools = ToolScript({"a": CallBehaviour(updates=1)})
    agent = Agent(model=model.model, stream_fn=model, tools=[tools.tool("t")])
    events: list[AgentEvent] = []

    def listener(event: AgentEvent, _signal: Any) -> None:
        events.append(event)
        if isinstance(event, ToolExecutionUpdate):
            raise RuntimeError("the UI broke")

    agent.subscribe(listener)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "go")
            await tools.release("a")  # the update; the call then waits for its last release
    assert agent.state.error_message == "the UI broke"
    assert "tool_execution_end" not in [event.type for event in events]
    check_event_grammar(events)
    assert tools.finishes == {"a": "cancelled"}
    cut = len(events) - 4  # without its failure lifecycle the run is left open
    with pytest.raises(EventGrammarError, match=f"^event {cut}: expected agent_end, found the end"):
        check_event_grammar(events[:cut])


def read_back(events: list[Any]) -> list[Any]:
    """The events as JSON lines read back, as ``pi-core run --json`` output would be."""
    return [loads(dumps(event), AgentEvent) for event in events]


def test_events_read_back_from_json_are_checked_by_value() -> None:
    events = read_back(canonical_run())
    assert events[3].message is not events[21].messages[0]  # identity is lost
    assert events[3].message == events[21].messages[0]
    check_event_grammar(events)


def test_events_read_back_from_json_still_fail_where_the_run_is_wrong() -> None:
    events = canonical_run()
    wrong_result = ToolResultMessage("b", "t", [TextContent("other")])
    events[16] = TurnEnd(events[16].message, [events[13].message, wrong_result])
    with pytest.raises(
        EventGrammarError, match=re.escape("turn_end.tool_results to be the turn's")
    ):
        check_event_grammar(read_back(events))


# --- check_transcript ---------------------------------------------------------------------------


def transcript() -> list[Any]:
    reply = scripted_reply(ToolCall("a", "t", {}), ToolCall("b", "t", {}))
    results = [ToolResultMessage(cid, "t", []) for cid in ("a", "b")]
    return [UserMessage("go"), reply, *results, UserMessage("steer"), scripted_reply("done")]


def test_a_valid_transcript_passes() -> None:
    check_transcript(transcript())
    aborted = scripted_reply(ToolCall("x", "t", {}), stop_reason="aborted")
    check_transcript([UserMessage("go"), aborted])  # an aborted reply's calls need no result


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        pytest.param(
            transcript()[:3],
            "message 3: expected the toolResult of call 'b' (t), found the end of the transcript",
            id="missing result",
        ),
        pytest.param(
            [*transcript()[:2], *reversed(transcript()[2:4])],
            "message 2: expected the toolResult of call 'a' (t), found toolResult 'b'",
            id="out of order",
        ),
        pytest.param(
            [*transcript()[:2], UserMessage("x"), *transcript()[2:]],
            "message 2: expected the toolResult of call 'a' (t), found a user message",
            id="message before the results",
        ),
        pytest.param(
            [*transcript(), ToolResultMessage("a", "t", [])],
            "message 6: toolResult 'a' answers no call",
            id="duplicate result",
        ),
    ],
)
def test_invalid_transcripts_are_rejected(messages: list[Any], message: str) -> None:
    with pytest.raises(TranscriptError, match="^" + re.escape(message)):
        check_transcript(messages)


# --- ScriptedStream -----------------------------------------------------------------------------


async def collect(stream: ScriptedStream, model: Model | None = None) -> list[Any]:
    from pi_core import Context

    return [event async for event in stream(model or stream.model, Context(None, [], []))]


async def test_a_reply_streams_block_by_block_into_one_live_partial() -> None:
    reply = scripted_reply("Hello world", ToolCall("c", "t", {"n": 1}))
    stream = ScriptedStream([reply], chunk_size=6)
    events: list[Any] = []
    contents: list[Any] = []  # each event's partial content as it was when the event came
    async for event in stream(Model("m", api="a", provider="p"), Context(None, [], [])):
        events.append(event)
        if not isinstance(event, StreamDone | StreamError):
            contents.append(copy.deepcopy(event.partial.content))
    assert [event.type for event in events] == [
        "start", "text_start", "text_delta", "text_delta", "text_end",
        "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end", "done",
    ]  # fmt: skip
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hello ", "world"]
    assert contents[2] == [TextContent("Hello ")]
    assert contents[6][1] == ToolCall("c", "t", {})  # '{"n": ' parses to no argument yet
    assert contents[8][1] == ToolCall("c", "t", {"n": 1})
    final = events[-1]
    assert isinstance(final, StreamDone)
    assert (final.reason, final.message.model, final.message.api) == ("toolUse", "m", "a")
    assert all(event.partial is final.message for event in events[:-1])  # one live message
    assert final.message.content == reply.content
    assert final.message is not reply  # every call streams a copy
    assert stream.calls == 1 and stream.open_streams == 0


async def test_replies_run_out_into_the_default_or_an_error() -> None:
    stream = ScriptedStream([scripted_reply("one")], default=scripted_reply("again"))
    texts = []
    for _ in range(3):
        texts.append((await collect(stream))[-1].message.content[0].text)
    assert texts == ["one", "again", "again"]
    bare = ScriptedStream()
    last = (await collect(bare))[-1]
    assert (last.type, last.reason) == ("error", "error")
    assert last.error.error_message == "ScriptedStream has no reply for call 0"


def test_scripted_reply_infers_the_stop_reason() -> None:
    assert scripted_reply("hi").stop_reason == "stop"
    assert scripted_reply(ToolCall("c", "t", {})).stop_reason == "toolUse"
    failed = scripted_reply("x", stop_reason="error")
    assert (failed.stop_reason, failed.error_message) == ("error", "scripted error")
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedStream(chunk_size=0)


async def test_block_at_stops_the_stream_until_it_is_cancelled() -> None:
    stream = ScriptedStream([scripted_reply("Hello world")], block_at=(0, 3))
    controller = AbortController()
    events: list[AgentEvent] = []
    config = AgentLoopConfig(stream.model, stream_fn=stream)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def abort_when_blocked() -> None:
                await stream.wait_blocked()
                controller.abort()

            tg.start_soon(abort_when_blocked)
            new = await run_agent_loop(
                [UserMessage("go")], AgentContext(), config, events.append, signal=controller.signal
            )
    check_event_grammar(events)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.stop_reason, final.content) == ("aborted", [TextContent("Hell")])
    assert stream.open_streams == 0


# --- ToolScript ---------------------------------------------------------------------------------


async def run_reply(
    tools: ToolScript, calls: list[ToolCall], drive: Callable[[], Any], **config: Any
) -> list[AgentEvent]:
    """Run one reply making ``calls`` (every call to the tool ``t``) while ``drive()`` runs."""
    stream = ScriptedStream([scripted_reply(*calls)], default=scripted_reply("done"))
    events: list[AgentEvent] = []
    context = AgentContext(tools=[tools.tool("t", timeout=config.pop("timeout", None))])
    loop_config = AgentLoopConfig(stream.model, stream_fn=stream, **config)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            await run_agent_loop([UserMessage("go")], context, loop_config, events.append)
    check_event_grammar(events)
    return events


def calls(*ids: str) -> list[ToolCall]:
    return [ToolCall(cid, "t", {}) for cid in ids]


def ends(events: list[AgentEvent]) -> list[tuple[str, bool, str]]:
    return [
        (e.tool_call_id, e.is_error, "".join(b.text for b in e.result.content))  # type: ignore[union-attr]
        for e in events
        if isinstance(e, ToolExecutionEnd)
    ]


async def test_release_sets_the_order_of_updates_and_ends() -> None:
    tools = ToolScript(
        {
            "a": CallBehaviour(updates=2),
            "b": CallBehaviour("fail"),
            "c": CallBehaviour("terminate"),
        }
    )

    async def drive() -> None:
        await tools.release("a")
        await tools.release("b")
        await tools.release("a")
        await tools.finish("c")
        await tools.release("a")

    events = await run_reply(tools, calls("a", "b", "c"), drive)
    tool_events = [
        (e.type, e.tool_call_id)
        for e in events
        if e.type in ("tool_execution_update", "tool_execution_end")
    ]
    assert tool_events == [
        ("tool_execution_update", "a"),
        ("tool_execution_end", "b"),
        ("tool_execution_update", "a"),
        ("tool_execution_end", "c"),
        ("tool_execution_end", "a"),
    ]
    assert ends(events) == [
        ("b", True, "t b failed"),
        ("c", False, "t c ok"),
        ("a", False, "t a ok"),
    ]
    terminate = [e.result.terminate for e in events if isinstance(e, ToolExecutionEnd)]
    assert terminate == [False, True, False]
    assert tools.finished == ["b", "c", "a"]
    assert tools.finishes == {"a": "returned", "b": "raised", "c": "returned"}
    assert tools.running == frozenset()
    assert tools.max_concurrency() == 3
    assert tools.max_concurrency(["a", "b"]) == 2


async def test_a_timeout_call_sends_its_updates_and_waits_for_its_timeout() -> None:
    tools = ToolScript({"slow": CallBehaviour("timeout", updates=1)})

    async def drive() -> None:
        await tools.wait_finished("slow")

    events = await run_reply(tools, calls("slow"), drive, timeout=0.001)
    assert [e.type for e in events].count("tool_execution_update") == 1
    assert ends(events) == [("slow", True, "Tool t timed out after 0.001 s")]
    assert tools.finishes == {"slow": "cancelled"}


async def test_the_script_releases_by_itself_in_the_given_order() -> None:
    tools = ToolScript(
        {"a": CallBehaviour(updates=1)},
        order=["c", "a", "b", "a"],
        batches=[ReleaseBatch(("a", "b", "c"))],
    )

    async def nothing() -> None:
        pass

    events = await run_reply(tools, calls("a", "b", "c"), nothing)
    assert [cid for cid, _, _ in ends(events)] == ["c", "b", "a"]
    assert tools.max_concurrency() == 3


async def test_release_by_order_respects_the_capacity_of_the_batch() -> None:
    tools = ToolScript(order=["d", "c", "b", "a"], batches=[ReleaseBatch(("a", "b", "c", "d"), 2)])

    async def nothing() -> None:
        pass

    events = await run_reply(tools, calls("a", "b", "c", "d"), nothing, max_parallel_tools=2)
    assert sorted(cid for cid, _, _ in ends(events)) == ["a", "b", "c", "d"]
    assert tools.max_concurrency() == 2


async def test_a_call_executed_twice_is_reported() -> None:
    tools = ToolScript(order=[])  # releases every call by itself
    tool = tools.tool("t")
    with anyio.fail_after(5):
        await tool.execute("a", {}, AbortController().signal, lambda _: None)
        with pytest.raises(RuntimeError, match="executed twice"):
            await tool.execute("a", {}, AbortController().signal, lambda _: None)


def test_behaviours_reject_negative_updates() -> None:
    with pytest.raises(ValueError, match="updates"):
        CallBehaviour(updates=-1)
    assert CallBehaviour("timeout", 3).steps == 0
    assert CallBehaviour("fail", 2).steps == 3


# --- RunScript and ScriptedRun ------------------------------------------------------------------


def test_a_run_script_describes_its_calls_and_batches() -> None:
    script = RunScript(
        (
            TurnScript((CallScript("x", "succeed"), CallScript("y", "unknown"))),
            TurnScript((CallScript("z", "invalid", sequential=True), CallScript("w", "timeout"))),
        ),
        max_parallel_tools=2,
    )
    assert [call.tool_name for call in script.calls] == ["work", "missing", "serial", "slow"]
    assert script.calls[2].tool_call().arguments == {}
    assert script.release_batches() == [ReleaseBatch(("x",), 2), ReleaseBatch(("w",), 1)]
    assert script.turns[0].reply().stop_reason == "toolUse"


async def test_a_scripted_run_plays_the_script() -> None:
    script = RunScript(
        (
            TurnScript(
                (CallScript("a", updates=1), CallScript("b", "blocked"), CallScript("c", "fail")),
                text="Working.",
            ),
        ),
        release_order=("c", "a", "a"),
    )
    harness = ScriptedRun(script)
    with anyio.fail_after(5):
        record = await harness.run()
    check_event_grammar(record.events)
    check_transcript(record.messages)
    assert ends(record.events) == [
        ("b", True, "b is blocked"),
        ("c", True, "work c failed"),
        ("a", False, "work a ok"),
    ]
    assert record.types[-2:] == ["turn_end", "agent_end"]
    assert harness.stream.calls == 2
    assert record.abort_at is None


async def test_a_scripted_run_aborts_at_the_chosen_event() -> None:
    script = RunScript((TurnScript((CallScript("a"),)),))
    with anyio.fail_after(5):
        whole = await ScriptedRun(script).run()
        start = whole.types.index("tool_execution_start")
        harness = ScriptedRun(script)
        record = await harness.run(abort_at=start)
    assert record.types[: start + 1] == whole.types[: start + 1]
    assert (record.abort_at, record.llm_calls_at_abort) == (start, 1)
    assert ends(record.events) == [("a", True, "Operation aborted")]
    assert harness.stream.calls == 1


# --- strategies ---------------------------------------------------------------------------------


@given(scripted_runs())
def test_scripted_runs_are_consistent(script: RunScript) -> None:
    ids = [call.id for call in script.calls]
    assert len(ids) == len(set(ids))
    assert 1 <= len(script.turns) <= 4
    assert all(1 <= len(turn.calls) <= 5 for turn in script.turns)
    steps = sorted(
        call.id for call in script.calls if call.executes for _ in range(call.behaviour().steps)
    )
    assert sorted(script.release_order) == steps


@given(scripted_runs(outcomes=["succeed"], modes=["sequential"], max_parallel=None))
def test_scripted_runs_follow_their_options(script: RunScript) -> None:
    assert {call.outcome for call in script.calls} == {"succeed"}
    assert script.tool_execution == "sequential"
    assert script.max_parallel_tools is None


@given(injections(max_event=10, max_size=5), abort_points(max_index=9))
def test_injections_and_abort_points(plan: list[Injection], point: int) -> None:
    assert [item.at_event for item in plan] == sorted(item.at_event for item in plan)
    assert len({item.text for item in plan}) == len(plan)
    assert all(0 <= item.at_event <= 10 for item in plan)
    assert 0 <= point <= 9


def test_call_outcomes_are_listed() -> None:
    assert set(get_args(CallOutcome)) == {
        "succeed", "terminate", "fail", "timeout", "unknown", "invalid", "blocked", "held",
    }  # fmt: skip


def test_everything_but_the_strategies_works_without_hypothesis() -> None:
    script = """
import sys
sys.modules["hypothesis"] = None  # as if it were not installed
from pi_core.testing import ScriptedStream, ToolScript, check_event_grammar, check_transcript
try:
    from pi_core.testing import scripted_runs
except ImportError as exc:
    print(exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == (
        f"pi_core.testing.scripted_runs needs hypothesis: {install_hint('testing')}"
    )
