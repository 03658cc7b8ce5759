"""An agent whose tool must never run twice: ``pay``, with ``replay="never"``.

Its first reply asks for ``pay`` (call ``pay-1``) and ``mark`` (a safe tool) in parallel; its
second says what the payment came to. Every execution of a tool appends a line to a file of the
run's ``params["dir"]`` (``pay``, ``mark``), so the test counts real executions across worker
processes. A payment that takes effect appends the call's id to ``ledger``; ``reconcile`` looks
it up there.

Params: ``dir``; ``reconcile`` (give ``pay`` its reconcile); ``effect_before_stall`` (the first
payment takes effect before it stalls, else it stalls before); ``approval_timeout``.
A worker started with ``STALL_SLOW=1`` stalls the run's first payment forever: the cue to kill
it mid-call. Serve it with ``pi-core worker durable._paying_agents:agents``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from durable._counting_agents import STALL_ENV, count, mark_tool
from durable.durable_agents import lines, note
from pi_core import (
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    tool,
)
from pi_core.durable import AgentSpec, DurableAgents
from pi_core.testing import ScriptedStream, scripted_reply

PAY_CALL = "pay-1"
TARGET = "durable._paying_agents:agents"

agents = DurableAgents()


def reply_to(messages: list[Any]) -> AssistantMessage:
    """Pay and mark first; then say what the payment's result was."""
    results = {m.tool_name: m for m in messages if isinstance(m, ToolResultMessage)}
    if "pay" not in results:
        calls = [ToolCall(PAY_CALL, "pay", {"amount": 5}), ToolCall("mark-1", "mark", {})]
        return scripted_reply("Paying.", *calls)
    paid = results["pay"]
    texts = " ".join(block.text for block in paid.content if isinstance(block, TextContent))
    return scripted_reply(f"payment: {texts}" + (" (error)" if paid.is_error else ""))


def paying_tools(directory: Path, params: dict[str, Any]) -> list[AgentTool]:
    ledger = directory / "ledger"

    async def find_payment(tool_call_id: str, args: Any) -> AgentToolResult | None:
        note(str(directory), "reconciled", tool_call_id)
        if tool_call_id in lines(directory, "ledger"):
            return AgentToolResult([TextContent(f"paid {args['amount']} (found in the ledger)")])
        return None

    @tool(replay="never", reconcile=find_payment if params.get("reconcile") else None)
    async def pay(amount: int, tool_call_id: str) -> str:
        """Pay ``amount``."""
        first = count(directory, "pay") == 1
        stall = first and os.environ.get(STALL_ENV) == "1"
        if stall and not params.get("effect_before_stall"):
            await anyio.sleep_forever()
        note(str(directory), ledger.name, tool_call_id)
        if stall:
            await anyio.sleep_forever()
        return f"paid {amount}"

    return [pay, mark_tool(directory)]


@agents.define("paying")
def paying(params: dict[str, Any]) -> AgentSpec:
    directory = Path(params["dir"])

    def stream(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        count(directory, "model")
        return ScriptedStream([reply_to(list(context.messages))])(model, context, options)

    return AgentSpec(
        model=ScriptedStream().model,
        stream_fn=stream,
        tools=paying_tools(directory, params),
        approval_timeout=params.get("approval_timeout"),
    )
