"""Checks that a transcript is valid: every tool call answered once, in order, right after it."""

from __future__ import annotations

from collections.abc import Sequence

from .. import AgentMessage, AssistantMessage, PiCoreError, ToolCall, ToolResultMessage

__all__ = ["TranscriptError", "check_transcript", "tool_calls_of"]


class TranscriptError(PiCoreError, AssertionError):
    """A transcript has a tool call without exactly one result, or results out of order."""


def check_transcript(messages: Sequence[AgentMessage], *, allow_held: bool = False) -> None:
    """Raise :class:`TranscriptError` unless the transcript is one a provider may be sent.

    Every tool call of an assistant message that completed (not stopped by ``error`` or
    ``aborted``) has exactly one toolResult message, in the calls' order, right after the
    assistant message; other messages (steering, say) may follow the results. A toolResult
    message anywhere else answers no call. This holds after any run that completes or is
    aborted (see "Abort and close-out" in the concepts page); a run that *failed* (see
    "Failures") may leave calls unanswered.

    With ``allow_held``, calls may have been held for approval, which changes two things: the
    transcript may end with a reply whose calls are only partly answered (the others wait for
    a decision), and a reply whose held calls were resolved later has its results in the order
    they were given (each call still answered once, right after the reply).
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
        calls = tool_calls_of(message)
        while calls:
            result = messages[index] if index < len(messages) else None
            if result is None and allow_held:
                return
            answered = _answered(calls, result, allow_held)
            if answered is None:
                raise TranscriptError(
                    f"message {index}: expected the toolResult of call {calls[0].id!r} "
                    f"({calls[0].name}), found {_describe(result)}"
                )
            del calls[answered]
            index += 1


def _answered(calls: list[ToolCall], result: object, any_order: bool) -> int | None:
    """The index among ``calls`` of the call ``result`` answers (the first call only, unless
    ``any_order``), or ``None``."""
    if not isinstance(result, ToolResultMessage):
        return None
    for index, call in enumerate(calls if any_order else calls[:1]):
        if call.id == result.tool_call_id:
            return index
    return None


def tool_calls_of(message: AssistantMessage) -> list[ToolCall]:
    """The tool-call blocks of ``message``, in order."""
    return [block for block in message.content if isinstance(block, ToolCall)]


def _describe(message: object) -> str:
    if message is None:
        return "the end of the transcript"
    if isinstance(message, ToolResultMessage):
        return f"toolResult {message.tool_call_id!r}"
    return f"a {getattr(message, 'role', type(message).__name__)} message"
