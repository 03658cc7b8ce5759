"""Durable agents that answer with a type: ``invoice`` answers wrongly once (beside a lookup
in the same batch), then rightly; ``stubborn`` never calls the output tool. Each model plans its
reply from the conversation, so a replayed run asks for the same replies.

Serve them with ``pi-core worker durable._output_agents:agents`` (tests/ on PYTHONPATH).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs

from pi_core import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    tool,
)
from pi_core.durable import AgentSpec, DurableAgents
from pi_core.testing import ScriptedStream, scripted_reply

agents = DurableAgents()


@attrs.frozen
class Invoice:
    number: str
    total: float


def planned(plan: Callable[[list[Any]], AssistantMessage]) -> Any:
    def stream(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return ScriptedStream([plan(list(context.messages))])(model, context, options)

    return stream


def invoice_plan(messages: list[Any]) -> AssistantMessage:
    refused = any(
        isinstance(m, ToolResultMessage) and m.tool_name == "final_result" and m.is_error
        for m in messages
    )
    if not refused:
        return scripted_reply(
            ToolCall("look-1", "lookup", {"number": "INV-1"}),
            ToolCall("out-1", "final_result", {"number": "INV-1", "total": "unknown"}),
        )
    return scripted_reply(ToolCall("out-2", "final_result", {"number": "INV-1", "total": "42.5"}))


@tool
def lookup(number: str) -> str:
    """Look an invoice up."""
    return f"{number}: 42.50 EUR"


@agents.define("invoice")
def invoice(_params: dict[str, Any]) -> AgentSpec:
    return AgentSpec(
        model=ScriptedStream().model,
        stream_fn=planned(invoice_plan),
        tools=[lookup],
        output_type=Invoice,
    )


@agents.define("stubborn")
def stubborn(_params: dict[str, Any]) -> AgentSpec:
    return AgentSpec(
        model=ScriptedStream().model,
        stream_fn=planned(lambda _messages: scripted_reply("I will not.")),
        output_type=Invoice,
        output_retries=1,
    )
