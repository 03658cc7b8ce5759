"""The invariants of a run hold under run control: random limits, graceful stops and calls held
for approval (then approved or denied at random) keep the event grammar, answer every call once,
and leave a transcript the next run continues."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_core import AgentEvent, Approve, Decision, Deny, RunLimits, pending_tool_calls
from pi_core.testing import (
    CONTROL_OUTCOMES,
    RunScript,
    ScriptedRun,
    check_event_grammar,
    check_transcript,
    scripted_runs,
)

pytestmark = pytest.mark.anyio

PROPERTY = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
limits = st.one_of(
    st.none(),
    st.builds(RunLimits, max_turns=st.integers(min_value=1, max_value=3)),
    st.builds(RunLimits, max_total_tokens=st.integers(min_value=1, max_value=400)),
)
stop_points = st.one_of(st.none(), st.integers(min_value=0, max_value=60))
DECISIONS: list[Decision] = [Approve(), Deny(), Deny("no")]
MAX_RESOLVES = 10


class Watcher:
    """Records a run's events and stops it while event ``stop_at`` is delivered."""

    def __init__(self, harness: ScriptedRun, stop_at: int | None) -> None:
        self.harness = harness
        self.stop_at = stop_at
        self.events: list[AgentEvent] = []
        self.calls_allowed: int | None = None
        """The model calls the run may make, once stopped: those made, and the request of a
        turn that has started without its reply yet (that turn is the step the run finishes)."""
        self.replying = False
        self.agent = harness.agent()
        self.agent.subscribe(self)

    def __call__(self, event: AgentEvent) -> None:
        if event.type == "turn_start":
            self.replying = False
        elif event.type == "message_start" and event.message.role == "assistant":
            self.replying = True
        if len(self.events) == self.stop_at:
            calls = self.harness.stream.calls
            self.calls_allowed = calls if self.replying else calls + 1
            self.agent.stop()
        self.events.append(event)

    def checked_run(self) -> list[AgentEvent]:
        """The events of the run just played, checked; the record starts afresh."""
        events, self.events = self.events, []
        check_event_grammar(events, allow_held=True)
        check_transcript(self.agent.messages, allow_held=True)
        return events


@PROPERTY
@given(
    script=scripted_runs(outcomes=CONTROL_OUTCOMES),
    limit=limits,
    stop_at=stop_points,
    data=st.data(),
)
async def test_limits_stops_and_approvals_keep_every_invariant(
    script: RunScript, limit: RunLimits | None, stop_at: int | None, data: st.DataObject
) -> None:
    harness = ScriptedRun(script)
    watcher = Watcher(harness, stop_at)
    agent = watcher.agent
    agent.limits = limit
    with anyio.fail_after(20):
        result = await agent.prompt("Go.")
    watcher.checked_run()
    if watcher.calls_allowed is not None:
        assert harness.stream.calls <= watcher.calls_allowed  # no request after the step
    if limit is not None and limit.max_turns is not None:
        assert harness.stream.calls <= limit.max_turns
    watcher.stop_at = None
    for _ in range(MAX_RESOLVES):
        if not result.pending:
            break
        assert result.ok and result.pending == agent.state.pending_approvals
        decisions: dict[str, Decision] = {
            call.tool_call_id: data.draw(st.sampled_from(DECISIONS)) for call in result.pending
        }
        with anyio.fail_after(20):
            result = await agent.resolve(decisions)
        watcher.checked_run()
    else:
        pytest.skip("the script holds calls in every turn")  # pragma: no cover
    # Every call answered once, no held call run twice, and the next run starts from here.
    assert pending_tool_calls(agent.messages) == []
    assert len(set(harness.gated_runs)) == len(harness.gated_runs)
    with anyio.fail_after(20):
        await agent.prompt("And now?")
    watcher.checked_run()


def test_held_is_not_drawn_by_default() -> None:
    from pi_core.testing import CallScript

    assert "held" in CONTROL_OUTCOMES
    assert CallScript("c", "held").tool_name == "gated"
    assert not CallScript("c", "held").executes
