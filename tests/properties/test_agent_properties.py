"""Properties of the Agent over arbitrary scripted runs: queues, abort and idle state.

Steering and follow-up messages are queued by a listener while a chosen event is delivered, and
the run may be aborted the same way, so every timing is an event index, never a sleep.
"""

from __future__ import annotations

from typing import Literal

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_core import (
    AbortSignal,
    Agent,
    AgentEvent,
    AssistantMessage,
    MessageEnd,
    MessageStart,
    UserMessage,
)
from pi_core.testing import (
    Injection,
    RunScript,
    ScriptedRun,
    ScriptedStream,
    abort_points,
    check_event_grammar,
    check_transcript,
    injections,
    scripted_runs,
)

pytestmark = pytest.mark.anyio

PROPERTY = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
QueueMode = Literal["all", "one-at-a-time"]
modes = st.sampled_from(["one-at-a-time", "all"])
MAX_DRAINS = 20


class Driver:
    """A listener that queues the scripted messages, and aborts, at their event indexes."""

    def __init__(
        self, agent: Agent, stream: ScriptedStream, plan: list[Injection], abort_at: int | None
    ) -> None:
        self.agent = agent
        self.stream = stream
        self.events: list[AgentEvent] = []
        self.abort_at = abort_at
        self.llm_calls_at_abort: int | None = None
        self.active = True
        self.queued: dict[str, list[UserMessage]] = {"steer": [], "follow_up": []}
        self._plan = plan
        agent.subscribe(self)

    def __call__(self, event: AgentEvent, signal: AbortSignal) -> None:
        if not self.active:
            return
        index = len(self.events)
        self.events.append(event)
        for injection in self._plan:
            if injection.at_event == index:
                message = UserMessage(injection.text)
                self.queued[injection.kind].append(message)
                (self.agent.steer if injection.kind == "steer" else self.agent.follow_up)(message)
        if index == self.abort_at:
            self.llm_calls_at_abort = self.stream.calls
            self.agent.abort()

    def check_nothing_after_the_abort(self) -> None:
        """No model call, no new turn and no queue poll once the run was aborted."""
        abort_at, events = self.abort_at, self.events
        if self.llm_calls_at_abort is None or abort_at is None:
            return
        assert self.stream.calls == self.llm_calls_at_abort
        later = [event.type for event in events[abort_at + 1 :]]
        assert later.count("turn_start") == (1 if abort_at == 0 else 0)
        # A queued message injected after the abort must have been drained before it: the
        # queues are polled right after the prompt's message_end and after each turn_end.
        prompt = events[3].message  # type: ignore[union-attr]
        queued = [m for messages in self.queued.values() for m in messages]
        for index in range(abort_at + 1, len(events)):
            event = events[index]
            if isinstance(event, MessageStart) and any(event.message is m for m in queued):
                poll = max(
                    i
                    for i in range(index)
                    if events[i].type == "turn_end"
                    or (isinstance(events[i], MessageEnd) and events[i].message is prompt)  # type: ignore[union-attr]
                )
                assert poll < abort_at, f"event {index}: injected, though polled after the abort"


class OneAtATime:
    """An async listener that yields to the event loop and checks it is never entered twice:
    tools keep running meanwhile, yet events reach listeners one at a time."""

    def __init__(self, agent: Agent) -> None:
        self.inside = False
        agent.subscribe(self)

    async def __call__(self, event: AgentEvent, signal: AbortSignal) -> None:
        assert not self.inside, f"{event.type} delivered while another event was"
        self.inside = True
        try:
            await anyio.lowlevel.checkpoint()
            await anyio.lowlevel.checkpoint()
        finally:
            self.inside = False


def text_of(message: UserMessage) -> str:
    assert isinstance(message.content, str)
    return message.content


def occurrences(agent: Agent, message: UserMessage) -> int:
    return sum(1 for candidate in agent.state.messages if candidate is message)


def check_idle(agent: Agent, harness: ScriptedRun) -> None:
    """The agent is idle and nothing of the run is left running."""
    assert not agent.state.is_streaming
    assert agent.state.pending_tool_calls == frozenset()
    assert agent.signal is None
    assert harness.tool_script.running == frozenset()
    assert harness.stream.open_streams == 0


@PROPERTY
@given(
    scripted_runs(max_turns=3, max_calls=3),
    injections(max_event=40, max_size=4),
    st.none() | abort_points(60),
    modes,
    modes,
)
async def test_every_queued_message_is_injected_exactly_once_or_still_queued(
    script: RunScript,
    plan: list[Injection],
    abort_at: int | None,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
) -> None:
    harness = ScriptedRun(script)
    agent = harness.agent(steering_mode=steering_mode, follow_up_mode=follow_up_mode)
    driver = Driver(agent, harness.stream, plan, abort_at)
    OneAtATime(agent)
    with anyio.fail_after(10):
        await agent.prompt("Go.")
    check_event_grammar(driver.events)
    check_transcript(agent.state.messages)
    check_idle(agent, harness)
    driver.check_nothing_after_the_abort()
    queued = driver.queued["steer"] + driver.queued["follow_up"]
    missing = [message for message in queued if occurrences(agent, message) == 0]
    assert all(occurrences(agent, message) <= 1 for message in queued)
    assert agent.has_queued_messages() == bool(missing)
    final = agent.state.messages[-1]
    aborted = abort_at is not None and abort_at < len(driver.events) - 1
    if not aborted and not (isinstance(final, AssistantMessage) and final.stop_reason == "error"):
        # Unless the run was aborted or ended in an error, it polls until the queues are
        # empty: only what was queued during agent_end stays behind.
        late = {inj.text for inj in plan if inj.at_event == len(driver.events) - 1}
        assert {text_of(message) for message in missing} <= late
    # What is still queued comes out, exactly once, when the agent continues.
    driver.active = False
    with anyio.fail_after(10):
        for _ in range(MAX_DRAINS):
            if not agent.has_queued_messages():
                break
            await agent.continue_()
    assert not agent.has_queued_messages()
    assert all(occurrences(agent, message) == 1 for message in queued)
    check_transcript(agent.state.messages)
    # Each queue is first in, first out.
    for kind in ("steer", "follow_up"):
        positions = [
            next(i for i, m in enumerate(agent.state.messages) if m is message)
            for message in driver.queued[kind]
        ]
        assert positions == sorted(positions)


@PROPERTY
@given(scripted_runs(max_turns=3, max_calls=4), abort_points(80))
async def test_an_aborted_agent_reports_where_it_stopped_and_is_idle(
    script: RunScript, abort_at: int
) -> None:
    harness = ScriptedRun(script)
    agent = harness.agent()
    driver = Driver(agent, harness.stream, [], abort_at)
    OneAtATime(agent)
    with anyio.fail_after(10):
        await agent.prompt("Go.")
    events = driver.events
    check_event_grammar(events)
    check_transcript(agent.state.messages)
    check_idle(agent, harness)
    driver.check_nothing_after_the_abort()
    last_turn_end = max(i for i, event in enumerate(events) if event.type == "turn_end")
    turn_end = events[last_turn_end]
    message = turn_end.message  # type: ignore[union-attr]
    assert isinstance(message, AssistantMessage)
    if message.stop_reason in ("aborted", "error"):
        assert agent.state.error_message == message.error_message
        if message.stop_reason == "aborted":
            assert message.error_message == "Request was aborted"
            assert abort_at < last_turn_end
    elif abort_at < last_turn_end and turn_end.tool_results:  # type: ignore[union-attr]
        # Aborted during the batch: the transcript ends with its results, ready to continue.
        assert agent.state.error_message == "Operation aborted"
        assert agent.state.messages[-1].role == "toolResult"
    else:
        assert agent.state.error_message is None
