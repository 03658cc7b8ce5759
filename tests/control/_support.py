"""What the run-control tests share: a model that keeps calling tools, recorders, tools."""

from __future__ import annotations

from typing import Any

import anyio

from pi_core import (
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ToolCall,
    Usage,
    UsageCost,
)
from pi_core.testing import ScriptedStream, scripted_reply

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}


def usage(input: int = 0, output: int = 0, cost: float = 0.0) -> Usage:
    """A reply's usage: ``cost`` dollars in all, split evenly between input and output."""
    return Usage(input, output, 0, 0, input + output, UsageCost(cost / 2, cost / 2, 0, 0, cost))


def tool_reply(*call_ids: str, name: str = "work", spent: Usage | None = None) -> AssistantMessage:
    """A reply calling ``name`` once per id, with ``spent`` as its usage."""
    reply = scripted_reply(*(ToolCall(call_id, name, {"n": 1}) for call_id in call_ids))
    reply.usage = spent or Usage()
    return reply


def text_reply(text: str = "done", spent: Usage | None = None) -> AssistantMessage:
    reply = scripted_reply(text)
    reply.usage = spent or Usage()
    return reply


def endless(spent: Usage | None = None, calls: int = 1) -> ScriptedStream:
    """A model that calls the ``work`` tool in every reply, for ever."""
    return ScriptedStream(default=tool_reply(*(f"w{i}" for i in range(calls)), spent=spent))


class Tools:
    """Tools that count their executions; ``gate`` makes ``slow`` wait until it is set."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.gate = anyio.Event()
        self.entered = anyio.Event()

    async def _work(self, call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        self.ran.append(call_id)
        return f"worked {call_id}"

    async def _slow(self, call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        self.entered.set()
        await self.gate.wait()
        self.ran.append(call_id)
        return f"slow {call_id}"

    def work(self, **options: Any) -> AgentTool:
        return AgentTool("work", "Work.", SCHEMA, self._work, **options)

    def slow(self, **options: Any) -> AgentTool:
        return AgentTool("slow", "Slow work.", SCHEMA, self._slow, **options)

    def result(self, call_id: str) -> AgentToolResult:
        return AgentToolResult([])
