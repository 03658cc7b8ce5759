"""Tool calls held for approval: what is held, the decisions, and how the held calls are found.

A held call is a tool call of the transcript's last assistant reply that has no result. Nothing
else marks it, so a transcript saved while calls wait is all a later process needs to list them
and resolve them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from ._messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage
from ._tools import AgentTool, RequiresApproval, prepared_call
from ._validation import validate_tool_arguments

__all__ = [
    "Approve",
    "Decision",
    "Deny",
    "PendingToolCall",
    "RequiresApproval",
    "check_decisions",
    "hold_verdict",
    "pending_tool_calls",
    "unanswered_calls",
]


@attrs.frozen
class PendingToolCall:
    """A tool call waiting for a decision: its id, tool, arguments and why it is held."""

    tool_call_id: str
    tool_name: str
    args: Any = attrs.field(hash=False)
    """The validated arguments (the raw ones when the call's tool is not known)."""
    reason: str | None = None
    """What the tool's ``requires_approval`` said, when it returned a text."""


@attrs.frozen
class Approve:
    """The decision to run a held call."""


@attrs.frozen
class Deny:
    """The decision not to run a held call: it is answered ``Tool call denied[: reason]``."""

    reason: str | None = None


Decision: TypeAlias = Approve | Deny


def unanswered_calls(messages: Sequence[AgentMessage]) -> list[ToolCall]:
    """The tool calls of the last assistant reply that have no result, in source order.

    A failed or aborted reply holds no calls: its calls are never run.
    """
    answered: set[str] = set()
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AssistantMessage):
            if message.stop_reason == "error" or message.stop_reason == "aborted":
                return []
            return [
                block
                for block in message.content
                if isinstance(block, ToolCall) and block.id not in answered
            ]
    return []


def pending_tool_calls(
    messages: Sequence[AgentMessage], tools: Iterable[AgentTool] = ()
) -> list[PendingToolCall]:
    """The calls of ``messages`` waiting for a decision: those of the last assistant reply that
    have no result.

    Args:
        messages: a transcript (a run's working context, a saved one loaded again).
        tools: the run's tools (:class:`~pi_core.AgentTool`), to give each call its validated
            arguments and the reason its tool's ``requires_approval`` gives for them.
    """
    by_name: dict[str, AgentTool] = {}
    for tool in tools:
        by_name.setdefault(tool.name, tool)  # the first tool of a name wins, as in a batch
    pending = []
    for call in unanswered_calls(messages):
        known = by_name.get(call.name)
        args, reason = (call.arguments, None) if known is None else _asked_again(known, call)
        pending.append(PendingToolCall(call.id, call.name, args, reason))
    return pending


def hold_verdict(tool: AgentTool, args: Any) -> tuple[bool, str | None]:
    """Whether a call of ``tool`` with the validated ``args`` is held, and why.

    Raises what a ``requires_approval`` function raises.
    """
    flag = getattr(tool, "requires_approval", False)  # a duck-typed tool may not have one
    if flag is False or flag is True:
        return flag, None
    verdict = flag(args)
    if isinstance(verdict, str):
        return True, verdict or None
    return bool(verdict), None


def _asked_again(tool: AgentTool, call: ToolCall) -> tuple[Any, str | None]:
    """A held call's validated arguments and its reason, asked of its tool once more; whatever
    fails leaves the raw arguments, or no reason."""
    try:
        args = validate_tool_arguments(tool, prepared_call(tool, call))
    except Exception:
        return call.arguments, None
    try:
        return args, hold_verdict(tool, args)[1]
    except Exception:
        return args, None


def check_decisions(
    decisions: Mapping[str, object], pending: Sequence[PendingToolCall]
) -> dict[str, Decision]:
    """``decisions``, once each pending call has one and each is a decision for a pending call.

    Raises:
        ValueError: naming the ids without a decision, the ids that are not pending, and the
            values that are not an ``Approve()`` or ``Deny(...)``.
    """
    waiting = {call.tool_call_id for call in pending}
    problems = []
    unknown = [key for key in decisions if key not in waiting]
    if unknown:
        problems.append(f"not pending: {', '.join(map(repr, unknown))}")
    missing = [call.tool_call_id for call in pending if call.tool_call_id not in decisions]
    if missing:
        problems.append(f"no decision for: {', '.join(map(repr, missing))}")
    wrong = [key for key, value in decisions.items() if not isinstance(value, (Approve, Deny))]
    if wrong:
        problems.append(
            "not Approve() or Deny(): " + ", ".join(f"{key!r}: {decisions[key]!r}" for key in wrong)
        )
    if problems:
        raise ValueError("Cannot resolve the pending tool calls: " + "; ".join(problems))
    return dict(decisions)  # type: ignore[arg-type]  # every value was checked above
