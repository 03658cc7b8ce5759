"""``replay`` and ``reconcile`` on a tool: declared, checked, and inert in an in-process run.

What they do in a durable run, after a crash, is in tests/durable/test_durable_replay_policy.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_core import (
    Agent,
    AgentTool,
    AgentToolResult,
    Approve,
    AssistantMessage,
    Deny,
    TextContent,
    ToolCall,
    tool,
)
from pi_core.lowlevel import tool_call_denied_text
from pi_core.testing import ScriptedStream, scripted_reply

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def _nothing(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
    return "done"


async def _found(tool_call_id: str, args: Any) -> AgentToolResult | None:
    return AgentToolResult([TextContent(f"found {tool_call_id}")])


def test_a_tool_may_run_again_unless_it_says_never() -> None:
    assert AgentTool("t", "d", SCHEMA, _nothing).replay == "safe"
    never = AgentTool("t", "d", SCHEMA, _nothing, replay="never", reconcile=_found)
    assert (never.replay, never.reconcile) == ("never", _found)


def test_a_replay_policy_other_than_safe_or_never_is_refused() -> None:
    with pytest.raises(ValueError, match="'sometimes'"):
        AgentTool("t", "d", SCHEMA, _nothing, replay="sometimes")  # type: ignore[arg-type]


def test_the_decorator_takes_the_policy_and_the_reconcile() -> None:
    @tool(replay="never", reconcile=_found)
    async def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    assert (pay.replay, pay.reconcile) == ("never", _found)


def test_decisions_say_what_a_denied_call_is_answered() -> None:
    assert Approve() == Approve()
    assert tool_call_denied_text(Deny().reason) == "Tool call denied"
    assert tool_call_denied_text(Deny("not today").reason) == "Tool call denied: not today"


@pytest.mark.anyio
async def test_in_process_a_never_replay_tool_runs_once_and_reconcile_is_not_asked() -> None:
    ran: list[str] = []
    asked: list[str] = []

    async def reconcile(tool_call_id: str, args: Any) -> AgentToolResult | None:
        asked.append(tool_call_id)
        return None

    @tool(replay="never", reconcile=reconcile)
    async def pay(amount: int, tool_call_id: str) -> str:
        """Pay ``amount``."""
        ran.append(tool_call_id)
        return f"paid {amount}"

    stream = ScriptedStream(
        [scripted_reply(ToolCall("pay-1", "pay", {"amount": 5})), scripted_reply("paid.")]
    )
    agent = Agent(model=stream.model, stream_fn=stream, tools=[pay])
    await agent.prompt("pay 5")
    assert ran == ["pay-1"] and asked == []
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.content == [TextContent("paid.")]
