"""The example of docs/testing.md, run as tests; the page's code blocks must be slices of this file.

Edit the example here and copy the changed block into the page: tests/test_docs_snippets.py fails
until both say the same (the page marks each block ``<!-- snippet: part of ... -->``).
"""

from __future__ import annotations

import anyio
import pytest
from hypothesis import HealthCheck, given, settings

from pi_core import (
    AbortSignal,
    Agent,
    AgentEvent,
    AgentStart,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from pi_core.testing import (
    CallBehaviour,
    RunScript,
    ScriptedRun,
    ScriptedStream,
    ToolScript,
    abort_points,
    check_event_grammar,
    check_transcript,
    scripted_reply,
    scripted_runs,
)

pytestmark = pytest.mark.anyio


class StatusBar:
    """What a UI shows while the agent works: is it busy, and which tools are running."""

    def __init__(self) -> None:
        self.busy = False
        self.running: set[str] = set()

    def __call__(self, event: AgentEvent, signal: AbortSignal) -> None:
        if isinstance(event, AgentStart):
            self.busy = True
        elif isinstance(event, ToolExecutionStart):
            self.running.add(event.tool_call_id)
        elif isinstance(event, ToolExecutionEnd):
            self.running.discard(event.tool_call_id)
        elif event.type == "agent_end":
            self.busy = False


async def test_tools_complete_in_the_order_the_test_releases_them() -> None:
    model = ScriptedStream(
        [
            scripted_reply(
                "Let me look.",
                ToolCall("a", "search", {"query": "pi"}),
                ToolCall("b", "search", {"query": "anyio"}),
            ),
            scripted_reply("Found both."),
        ]
    )
    tools = ToolScript({"a": CallBehaviour(updates=1), "b": CallBehaviour("fail")})
    agent = Agent(model=model.model, stream_fn=model, tools=[tools.tool("search")])
    status = StatusBar()
    agent.subscribe(status)
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "Find pi and anyio.")
            await tools.release("b")  # b fails first,
            await tools.release("a")  # then a reports progress,
            await tools.release("a")  # then a completes.

    check_event_grammar(events)
    check_transcript(agent.state.messages)
    ends = [event for event in events if isinstance(event, ToolExecutionEnd)]
    assert [(end.tool_call_id, end.is_error) for end in ends] == [("b", True), ("a", False)]
    assert not status.busy and status.running == set()


async def test_an_abort_mid_reply_keeps_what_was_streamed() -> None:
    # Events of this reply: 0 start, 1 text_start, 2 "A lo", 3 "ng a", ... : stop before 3.
    model = ScriptedStream([scripted_reply("A long answer")], block_at=(0, 3))
    agent = Agent(model=model.model, stream_fn=model)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "Tell me everything.")
            await model.wait_blocked()
            agent.abort()

    reply = agent.state.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.stop_reason == "aborted"
    assert reply.content == [TextContent("A lo")]
    assert agent.state.error_message == "Request was aborted"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scripted_runs(max_turns=3, max_calls=4), abort_points(max_index=80))
async def test_the_status_bar_is_idle_after_any_run(script: RunScript, abort_at: int) -> None:
    harness = ScriptedRun(script)  # fresh model and tools that play the script
    agent = harness.agent()
    status = StatusBar()
    agent.subscribe(status)
    events: list[AgentEvent] = []

    def abort_at_the_chosen_event(event: AgentEvent, signal: AbortSignal) -> None:
        events.append(event)
        if len(events) - 1 == abort_at:
            agent.abort()

    agent.subscribe(abort_at_the_chosen_event)
    with anyio.fail_after(10):
        await agent.prompt("Go.")

    check_event_grammar(events)
    check_transcript(agent.state.messages)
    assert not status.busy and status.running == set()
