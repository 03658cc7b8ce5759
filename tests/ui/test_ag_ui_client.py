"""The official AG-UI client (``@ag-ui/client`` on Node) against ``ag_ui_app`` on 127.0.0.1, on
both backends: a run with parallel tools, an abort, an approval; every event it received is also
checked with the Python protocol types."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from asgi_server import serve_on_localhost
from pi_core import TextContent, ToolResultMessage
from pi_core.lowlevel import OPERATION_ABORTED
from pi_core.ui import ag_ui_app
from ui.ui_support import AgentRecorder, approving_agent, check_ag_ui_grammar, run_node

pytestmark = pytest.mark.anyio

TOKEN = "ui-test-token"


def customs(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == name]


async def test_a_run_with_parallel_tools(ui_node: str, anyio_backend: str) -> None:
    app = ag_ui_app(AgentRecorder(), auth_token=TOKEN)
    async with serve_on_localhost(app, anyio_backend) as url:
        out = await run_node(
            ui_node, "ag_ui_client.mjs", url + "/", TOKEN, "run", "sleep 0.2 and 6*7"
        )
    [run] = out["runs"]
    assert run["error"] is None
    events = run["events"]
    check_ag_ui_grammar(events)
    names = [e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert names == ["sleep", "calculate", "now"]
    # In parallel: every call started before the first one ended; sleep, the slowest, ends last.
    kinds = [
        e["name"]
        for e in events
        if e["type"] == "CUSTOM" and e["name"].endswith(("_start", "_end"))
    ]
    assert kinds == ["pi_core.tool_start"] * 3 + ["pi_core.tool_end"] * 3
    assert customs(events, "pi_core.tool_end")[-1]["toolName"] == "sleep"
    assert any(e["type"] == "REASONING_MESSAGE_CONTENT" for e in events)
    assert [e["stepName"] for e in events if e["type"] == "STEP_STARTED"] == ["turn 1", "turn 2"]
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED" and finished["usage"][0]["totalTokens"] > 0
    # The client rebuilt the conversation: the prompt, one reply with three calls, their
    # results, the report.
    messages = out["messages"]
    roles = [m["role"] for m in messages if m["role"] != "reasoning"]
    assert roles == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    [calls] = [m["toolCalls"] for m in messages if m.get("toolCalls")]
    assert [c["function"]["name"] for c in calls] == ["sleep", "calculate", "now"]
    results = {m["toolCallId"]: m["content"] for m in messages if m["role"] == "tool"}
    assert results[calls[1]["id"]] == "6*7 = 42"
    assert messages[-1]["content"].startswith("Here is what the tools reported:")


async def test_the_client_sends_the_transcript_back(ui_node: str, anyio_backend: str) -> None:
    recorder = AgentRecorder()
    async with serve_on_localhost(ag_ui_app(recorder), anyio_backend) as url:
        await run_node(ui_node, "ag_ui_client.mjs", url + "/", "", "twice", "sleep 0 and 2+2")
    first, second = recorder.agents
    # The second run's Agent started from the messages the client rebuilt from the first run.
    before = second.messages[: len(first.messages)]
    assert [m.role for m in before] == [m.role for m in first.messages]

    def results(messages: list[Any]) -> dict[str, Any]:
        return {m.tool_call_id: m.content for m in messages if isinstance(m, ToolResultMessage)}

    # (The client keeps them in the order they arrived, the Agent in the order they ended.)
    assert len(results(before)) == 3 and results(before) == results(first.messages)
    assert second.messages[-1].role == "assistant"


async def test_an_abort_in_the_client_aborts_the_run(ui_node: str, anyio_backend: str) -> None:
    recorder = AgentRecorder()
    async with serve_on_localhost(ag_ui_app(recorder), anyio_backend) as url:
        out = await run_node(ui_node, "ag_ui_client.mjs", url + "/", "", "abort", "sleep 30")
        [agent] = recorder.agents
        with anyio.fail_after(20):
            await agent.wait_for_idle()
    events = out["runs"][0]["events"]
    assert "RUN_FINISHED" not in [e["type"] for e in events]
    # The run was aborted, not just cut: every call answered, the transcript continuable.
    sleep = next(
        m for m in agent.messages if isinstance(m, ToolResultMessage) and m.tool_name == "sleep"
    )
    assert sleep.is_error and sleep.content == [TextContent(OPERATION_ABORTED)]
    assert not agent.state.is_streaming


async def test_a_wrong_token_is_refused(ui_node: str, anyio_backend: str) -> None:
    app = ag_ui_app(AgentRecorder(), auth_token=TOKEN)
    async with serve_on_localhost(app, anyio_backend) as url:
        out = await run_node(ui_node, "ag_ui_client.mjs", url + "/", "wrong", "run", "hi")
    assert "401" in out["runs"][0]["error"]


async def test_sub_agents_nest_as_the_protocol_does(ui_node: str, anyio_backend: str) -> None:
    async with serve_on_localhost(ag_ui_app(AgentRecorder()), anyio_backend) as url:
        out = await run_node(
            ui_node, "ag_ui_client.mjs", url + "/", "", "run", "research the time and 17 * 23"
        )
    [run] = out["runs"]
    assert run["error"] is None
    events = run["events"]
    check_ag_ui_grammar([e for e in events if "subagentRunId" not in e])
    started = [e for e in events if e["type"] == "SUBAGENT_STARTED"]
    finished = [e for e in events if e["type"] == "SUBAGENT_FINISHED"]
    calls = [
        e["toolCallId"]
        for e in events
        if e["type"] == "TOOL_CALL_START" and "subagentRunId" not in e
    ]
    assert [e["name"] for e in started] == ["research", "research"]
    assert sorted(e["subagentRunId"] for e in started) == sorted(f"{c}/research" for c in calls)
    assert sorted(e["parentToolCallId"] for e in started) == sorted(calls)
    assert sorted(e["subagentRunId"] for e in finished) == sorted(
        e["subagentRunId"] for e in started
    )
    for child in started:
        own = [e for e in events if e.get("subagentRunId") == child["subagentRunId"]]
        check_ag_ui_grammar(
            [
                {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                *own[1:-1],
                {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
            ]
        )
        tools = [e["toolCallName"] for e in own if e["type"] == "TOOL_CALL_START"]
        assert "calculate" in tools
    # The child's answers are the parent calls' results.
    results = [
        e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT" and "subagentRunId" not in e
    ]
    assert any("17 * 23 = 391" in text for text in results)
    # The run's usage counts every turn, the children's as well as its own.
    turns = customs(events, "pi_core.usage")
    children = [e for e in events if e.get("name") == "pi_core.usage" and "subagentRunId" in e]
    assert len(children) >= 2 and len(turns) > len(children)
    total = sum(turn["usage"]["totalTokens"] for turn in turns)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["usage"][0]["totalTokens"] == total


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_an_approval_waits_for_the_clients_decision(
    ui_node: str, anyio_backend: str, decision: str
) -> None:
    recorder = AgentRecorder(approving_agent)
    async with serve_on_localhost(ag_ui_app(recorder), anyio_backend) as url:
        out = await run_node(
            ui_node, "ag_ui_client.mjs", url + "/", "", decision, "delete my notes"
        )
    first, second = out["runs"]
    check_ag_ui_grammar(first["events"])
    first_calls = [e["toolCallId"] for e in first["events"] if e["type"] == "TOOL_CALL_START"]
    check_ag_ui_grammar(second["events"], earlier_calls=first_calls)
    # The first run held delete_file (and ran calculate), then finished with an interrupt.
    [pending] = customs(first["events"], "pi_core.pending_approval")
    assert pending["toolName"] == "delete_file" and pending["reason"] == "deletes notes.txt"
    assert pending["args"] == {"path": "notes.txt"}
    outcome = first["events"][-1]["outcome"]
    assert outcome["type"] == "interrupt"
    assert [i["toolCallId"] for i in outcome["interrupts"]] == [pending["toolCallId"]]
    assert [i["toolCallId"] for i in first["interrupts"]] == [pending["toolCallId"]]
    ran = [v["toolName"] for v in customs(first["events"], "pi_core.tool_start")]
    assert ran == ["calculate"]
    # The second run, resumed with the decision, answered it and went on to the reply.
    [result] = [e for e in second["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == pending["toolCallId"]
    if decision == "approve":
        assert result["content"] == "deleted notes.txt"
    else:
        assert result["content"] == "Tool call denied: not now"
    assert second["events"][-1]["type"] == "RUN_FINISHED"
    assert "outcome" not in second["events"][-1]
    assert second["interrupts"] == []
