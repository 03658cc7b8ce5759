"""The benchmark scenarios run, at tiny sizes, and emit the event counts their formulas promise.

No timing here: speed lives in bench/ (``nox -s bench``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from backends import BACKENDS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ sits next to tests/

from bench import floors, output_validation, replay_tools, scenarios, subagent_events, tool_args

from pi_core import AgentContext, AgentEvent, AgentLoopConfig, ToolCall, UserMessage, run_agent_loop
from pi_core._output import OutputSpec

pytestmark = pytest.mark.anyio

TOOL_TURN = [
    "turn_start",
    "message_start",
    *["message_update"] * 8,  # text_start, three text_delta, text_end, toolcall_start/_delta/_end
    "message_end",
    "tool_execution_start",
    "tool_execution_end",
    "message_start",
    "message_end",
    "turn_end",
]
TEXT_TURN = ["turn_start", "message_start", *["message_update"] * 5, "message_end", "turn_end"]


@pytest.mark.parametrize("name", sorted(scenarios.SPECS))
async def test_scenario_emits_the_event_count_of_its_formula(name: str) -> None:
    spec = scenarios.SPECS[name]
    run = scenarios.prepare(name, spec.smoke)
    assert await run() == spec.events(spec.smoke) + spec.declared(spec.smoke)


@pytest.mark.parametrize("name", sorted(scenarios.SPECS))
async def test_floor_runs(name: str) -> None:
    run = floors.prepare(name, scenarios.SPECS[name].smoke)
    assert await run() >= 0


async def test_turns_emit_sixteen_events_per_tool_turn() -> None:
    events: list[AgentEvent] = []

    async def emit(event: AgentEvent) -> None:
        events.append(event)

    replies = [scenarios.tool_reply("noop", 1)] * 2 + [scenarios.text_reply()]
    config = AgentLoopConfig(
        scenarios.MODEL,
        stream_fn=scenarios.Scripted(replies),
        convert_to_llm=scenarios.convert_to_llm,
    )
    context = AgentContext(tools=[scenarios.NOOP_TOOL])
    await run_agent_loop([UserMessage("go")], context, config, emit)

    declared = ["message_start", "message_end"]  # the system message declaring the tool
    prompt = ["agent_start", "turn_start", *declared, "message_start", "message_end"]
    # The first turn's turn_start comes before the prompt, so 16T - 3 = 4 + 15 + 16 + 9 + 1,
    # and the declaration adds 2.
    expected = [*prompt, *TOOL_TURN[1:], *TOOL_TURN, *TEXT_TURN, "agent_end"]
    assert [event.type for event in events] == expected
    spec = scenarios.SPECS["turns"]
    assert len(events) == spec.events(3) + spec.declared(3)


@pytest.mark.parametrize("path", sorted(tool_args.PATHS))
def test_the_tool_arguments_scenario_rebuilds_the_whole_arguments(path: str) -> None:
    row = tool_args.measure(path, 4, 4)  # measure() checks the final arguments hold it all
    assert row["params"] == {"path": path, "kib": 4, "delta": 4, "deltas": 1105}


def test_the_replay_tools_bench_replays_every_change() -> None:
    row = replay_tools.measure(100, 5, rounds=1)  # measure() checks the replayed tools
    assert row["params"] == {"messages": 100, "changes": 5, "rounds": 1}
    messages = replay_tools.transcript(100, 5)
    assert len(messages) == 100
    assert sum(1 for m in messages if m.role == "system") == 6  # the leading one and 5 changes


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_subagent_events_scenario_forwards_every_event_of_the_child(backend: str) -> None:
    row = subagent_events.measure(50, backend)  # measure() checks every event was forwarded
    assert row["params"] == {"D": 50, "backend": backend, "events": 60}


def test_the_output_validation_bench_reads_back_what_was_sent() -> None:
    spec = OutputSpec.of(output_validation.output_class(10))
    assert spec is not None
    call = ToolCall(id="o1", name="final_result", arguments=output_validation.answer_of(10))
    value = output_validation.read_once(spec, call)
    assert (value.f0, value.f1, value.f3, value.f4) == ("text", 42, True, ["a", "b"])
