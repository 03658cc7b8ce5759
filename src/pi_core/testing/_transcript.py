"""Checks that a transcript is valid: every tool call answered once, in order, right after it."""

from __future__ import annotations

from collections.abc import Sequence

from .._messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage

__all__ = ["TranscriptError", "check_transcript", "tool_calls_of"]


class TranscriptError(AssertionError):
    """A transcript has a tool call without exactly one result, or results out of order."""


def check_transcript(messages: Sequence[AgentMessage]) -> None:
    """Raise :class:`TranscriptError` unless the transcript is one a provider may be sent.

    Every tool call of an assistant message that completed (not stopped by ``error`` or
    ``aborted``) has exactly one toolResult message, in the calls' order, right after the
    assistant message; other messages (steering, say) may follow the results. A toolResult
    message anywhere else answers no call. This holds after any run that completes or is
    aborted (see "Abort and close-out" in the concepts page); a run that *failed* (see
    "Failures") may leave calls unanswered.
    """
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, ToolResultMessage):
            raise TranscriptError(
                f"message {index - 1}: toolResult {message.tool_call_id!r} answers no call "
                f"(results must follow their assistant message, one per call)"
            )
        if not isinstance(message, AssistantMessage) or message.stop_reason in ("error", "aborted"):
            continue
        for call in tool_calls_of(message):
            result = messages[index] if index < len(messages) else None
            if not isinstance(result, ToolResultMessage) or result.tool_call_id != call.id:
                raise TranscriptError(
                    f"message {index}: expected the toolResult of call {call.id!r} "
                    f"({call.name}), found {_describe(result)}"
                )
            index += 1


def tool_calls_of(message: AssistantMessage) -> list[ToolCall]:
    """The tool-call blocks of ``message``, in order."""
    return [block for block in message.content if isinstance(block, ToolCall)]


def _describe(message: object) -> str:
    if message is None:
        return "the end of the transcript"
    if isinstance(message, ToolResultMessage):
        return f"toolResult {message.tool_call_id!r}"
    return f"a {getattr(message, 'role', type(message).__name__)} message"
