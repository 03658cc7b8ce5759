"""Agents whose calls wait inside a durable run: ``sending``, with a tool that needs approval,
and ``deadlined``, whose run has a deadline.

``sending``'s first reply asks for ``send`` (``requires_approval``, with the reason ``sends <n>
to <to>``) and ``mark`` (a safe tool) in parallel; its second says what the sending came to.
``deadlined``'s first reply asks for ``slow``; its second says what that came to. Every
execution of a tool (and every model call) appends a line to a file of the run's
``params["dir"]``, so a test counts real executions across worker processes.

Params: ``dir``; ``approval_timeout`` and ``max_turns`` (``sending``); ``deadline`` (``deadlined``, seconds). A
worker started with ``STALL_SLOW=1`` stalls ``slow`` forever: the cue to kill it mid-call.
Serve them with ``pi-core worker durable._approving_agents:agents``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from durable._counting_agents import STALL_ENV, count, mark_tool
from pi_core import (
    AgentTool,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    RunLimits,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    tool,
)
from pi_core.durable import AgentSpec, DurableAgents
from pi_core.testing import ScriptedStream, scripted_reply

SEND_CALL = "send-1"
SLOW_CALL = "slow-1"
SEND_REASON = "sends 5 to bob"
TARGET = "durable._approving_agents:agents"

agents = DurableAgents()


def answer(
    tool_name: str, call: ToolCall, *more: ToolCall
) -> Callable[[list[Any]], AssistantMessage]:
    """A model that asks for ``call`` (and ``more``), then says what ``tool_name`` came to."""

    def reply_to(messages: list[Any]) -> AssistantMessage:
        results = {m.tool_name: m for m in messages if isinstance(m, ToolResultMessage)}
        if tool_name not in results:
            return scripted_reply("On it.", call, *more)
        done = results[tool_name]
        text = " ".join(block.text for block in done.content if isinstance(block, TextContent))
        return scripted_reply(f"{tool_name}: {text}" + (" (error)" if done.is_error else ""))

    return reply_to


def counted_model(
    directory: Path, reply_to: Callable[[list[Any]], AssistantMessage]
) -> Callable[..., AsyncIterator[AssistantMessageEvent]]:
    def stream(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        count(directory, "model")
        return ScriptedStream([reply_to(list(context.messages))])(model, context, options)

    return stream


def sending_tools(directory: Path) -> list[AgentTool]:
    @tool(requires_approval=lambda args: f"sends {args['amount']} to {args['to']}")
    async def send(amount: int, to: str) -> str:
        """Send ``amount`` to ``to``."""
        count(directory, "send")
        return f"sent {amount} to {to}"

    return [send, mark_tool(directory)]


@agents.define("sending")
def sending(params: dict[str, Any]) -> AgentSpec:
    directory = Path(params["dir"])
    calls = ToolCall(SEND_CALL, "send", {"amount": 5, "to": "bob"}), ToolCall("mark-1", "mark", {})
    return AgentSpec(
        model=ScriptedStream().model,
        stream_fn=counted_model(directory, answer("send", *calls)),
        tools=sending_tools(directory),
        approval_timeout=params.get("approval_timeout"),
        limits=RunLimits(max_turns=params["max_turns"]) if "max_turns" in params else None,
    )


@agents.define("deadlined")
def deadlined(params: dict[str, Any]) -> AgentSpec:
    directory = Path(params["dir"])

    @tool
    async def slow() -> str:
        """Take a while."""
        await anyio.lowlevel.checkpoint()  # an aborted call ends here, before it counts
        if count(directory, "slow") == 1 and os.environ.get(STALL_ENV) == "1":
            await anyio.sleep_forever()
        return "done"

    return AgentSpec(
        model=ScriptedStream().model,
        stream_fn=counted_model(directory, answer("slow", ToolCall(SLOW_CALL, "slow", {}))),
        tools=[slow],
        limits=RunLimits(deadline=params["deadline"]),
    )
