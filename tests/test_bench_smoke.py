"""The benchmark scenarios run, at tiny sizes, and emit the event counts their formulas promise.

No timing here: speed lives in bench/ (``nox -s bench``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ sits next to tests/

from bench import floors, scenarios, tool_args

from pi_core import AgentContext, AgentEvent, AgentLoopConfig, UserMessage, run_agent_loop

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
    assert await run() == spec.events(spec.smoke)


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

    prompt = ["agent_start", "turn_start", "message_start", "message_end"]
    # The first turn's turn_start comes before the prompt, so 16T - 3 = 4 + 15 + 16 + 9 + 1.
    expected = [*prompt, *TOOL_TURN[1:], *TOOL_TURN, *TEXT_TURN, "agent_end"]
    assert [event.type for event in events] == expected
    assert len(events) == scenarios.SPECS["turns"].events(3)


@pytest.mark.parametrize("path", sorted(tool_args.PATHS))
def test_the_tool_arguments_scenario_rebuilds_the_whole_arguments(path: str) -> None:
    row = tool_args.measure(path, 4, 4)  # measure() checks the final arguments hold it all
    assert row["params"] == {"path": path, "kib": 4, "delta": 4, "deltas": 1105}
