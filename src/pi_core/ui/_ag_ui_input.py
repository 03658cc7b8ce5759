"""A client's ``RunAgentInput`` as what the Agent runs: its transcript, and what to do with it.

AG-UI clients keep the conversation and send all of it with each run. The messages become the
Agent's transcript (tool results included); what the run does follows from its end: a user
message is the prompt, tool results continue the run, and resume entries answering the
approvals of the previous run become the decisions of ``agent.resolve``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import attrs
from ag_ui.core import RunAgentInput

from .. import (
    AgentMessage,
    AssistantMessage,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["InputError", "RunPlan", "plan_run"]


class InputError(ValueError):
    """The input cannot be run; the text says why (sent to the client as it is)."""


@attrs.frozen
class RunPlan:
    """What one AG-UI run does."""

    action: Literal["prompt", "continue", "resolve"]
    history: list[AgentMessage]
    """The transcript before the run (without the prompt)."""
    prompt: UserMessage | None = None
    decisions: dict[str, tuple[bool, str | None]] = attrs.Factory(dict)
    """For ``resolve``: per tool call id, whether it is approved and the denial's reason."""


def plan_run(run_input: RunAgentInput, model: Model) -> RunPlan:
    """The transcript and action of ``run_input``; assistant messages are stamped with ``model``.

    Raises:
        InputError: no messages, a message of an unknown shape, or nothing to run.
    """
    messages = convert_messages(run_input.messages, model)
    if run_input.resume:
        return RunPlan("resolve", messages, decisions=_decisions(run_input.resume))
    if not messages:
        raise InputError("RunAgentInput.messages is empty: nothing to answer")
    last = messages[-1]
    if isinstance(last, UserMessage):
        return RunPlan("prompt", messages[:-1], prompt=last)
    if isinstance(last, ToolResultMessage):
        return RunPlan("continue", messages)
    raise InputError("the last message is the assistant's: send a user message or tool results")


def convert_messages(messages: Sequence[Any], model: Model) -> list[AgentMessage]:
    """AG-UI messages as pi_core's; system, developer, activity and reasoning messages are
    left out (the Agent has its own system prompt)."""
    converted: list[AgentMessage] = []
    names: dict[str, str] = {}  # tool call id -> tool name, for the results
    for message in messages:
        role = message.role
        if role == "user":
            converted.append(UserMessage(_text(message.content)))
        elif role == "assistant":
            reply = _assistant(message, model)
            names.update((c.id, c.name) for c in reply.content if isinstance(c, ToolCall))
            converted.append(reply)
        elif role == "tool":
            converted.append(_tool_result(message, names))
    return converted


def _assistant(message: Any, model: Model) -> AssistantMessage:
    content: list[TextContent | ToolCall] = []
    if message.content:
        content.append(TextContent(message.content))
    for call in message.tool_calls or ():
        content.append(ToolCall(call.id, call.function.name, _arguments(call.function.arguments)))
    stop_reason: Any = "toolUse" if message.tool_calls else "stop"
    return AssistantMessage(
        content=list(content),
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason=stop_reason,
    )


def _tool_result(message: Any, names: dict[str, str]) -> ToolResultMessage:
    name = names.get(message.tool_call_id)
    if name is None:
        raise InputError(f"tool message {message.id!r} answers no tool call of the messages")
    text = _text(message.content)
    is_error = message.error is not None
    if is_error and not text:
        text = message.error
    return ToolResultMessage(message.tool_call_id, name, [TextContent(text)], is_error=is_error)


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        raise InputError(f"tool call arguments are not JSON: {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise InputError("tool call arguments must be a JSON object")
    return value


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content if getattr(part, "type", None) == "text")


def _decisions(resume: Sequence[Any]) -> dict[str, tuple[bool, str | None]]:
    decisions: dict[str, tuple[bool, str | None]] = {}
    for entry in resume:
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        approved = entry.status == "resolved" and payload.get("approved", True) is not False
        reason = payload.get("reason")
        decisions[entry.interrupt_id] = (approved, reason if isinstance(reason, str) else None)
    return decisions
