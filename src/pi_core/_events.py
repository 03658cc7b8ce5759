"""Events: the provider stream protocol and the agent events a run emits.

Every class carries its upstream ``type`` string as a class attribute, so a consumer can dispatch on
``event.type`` as in the TypeScript original, or on the class with ``match`` / ``isinstance``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import attrs

from ._messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage
from ._texts import NO_STOP_REASON
from ._tools import AgentToolResult

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "AssistantMessageEvent",
    "AwaitingEmit",
    "Emit",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "StreamDone",
    "StreamError",
    "StreamStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "TurnEnd",
    "TurnStart",
    "terminal_event",
]

# --- the provider stream protocol ---------------------------------------------------------------


@attrs.frozen
class StreamStart:
    """The reply has begun; ``partial`` is the message built so far."""

    type: ClassVar[Literal["start"]] = "start"
    partial: AssistantMessage


@attrs.frozen
class TextStart:
    """A text block begins at ``content_index``."""

    type: ClassVar[Literal["text_start"]] = "text_start"
    content_index: int
    partial: AssistantMessage


@attrs.frozen
class TextDelta:
    """More text for the block at ``content_index``."""

    type: ClassVar[Literal["text_delta"]] = "text_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@attrs.frozen
class TextEnd:
    """The text block at ``content_index`` is complete; ``content`` is its full text."""

    type: ClassVar[Literal["text_end"]] = "text_end"
    content_index: int
    content: str
    partial: AssistantMessage


@attrs.frozen
class ThinkingStart:
    """A thinking block begins at ``content_index``."""

    type: ClassVar[Literal["thinking_start"]] = "thinking_start"
    content_index: int
    partial: AssistantMessage


@attrs.frozen
class ThinkingDelta:
    """More reasoning for the block at ``content_index``."""

    type: ClassVar[Literal["thinking_delta"]] = "thinking_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@attrs.frozen
class ThinkingEnd:
    """The thinking block at ``content_index`` is complete; ``content`` is its full text."""

    type: ClassVar[Literal["thinking_end"]] = "thinking_end"
    content_index: int
    content: str
    partial: AssistantMessage


@attrs.frozen
class ToolCallStart:
    """A tool call begins at ``content_index``."""

    type: ClassVar[Literal["toolcall_start"]] = "toolcall_start"
    content_index: int
    partial: AssistantMessage


@attrs.frozen
class ToolCallDelta:
    """A raw JSON fragment of the arguments of the tool call at ``content_index``."""

    type: ClassVar[Literal["toolcall_delta"]] = "toolcall_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


@attrs.frozen
class ToolCallEnd:
    """The tool call at ``content_index`` is complete."""

    type: ClassVar[Literal["toolcall_end"]] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage


@attrs.frozen
class StreamDone:
    """The reply is complete; nothing follows. ``reason`` is stop, length, toolUse, or deferred
    (the provider will answer later)."""

    type: ClassVar[Literal["done"]] = "done"
    reason: Literal["stop", "length", "toolUse", "deferred"]
    message: AssistantMessage


@attrs.frozen
class StreamError:
    """The reply failed or was aborted; ``error`` is the final message. Nothing follows."""

    type: ClassVar[Literal["error"]] = "error"
    reason: Literal["aborted", "error"]
    error: AssistantMessage


def terminal_event(message: AssistantMessage) -> StreamDone | StreamError:
    """The event that ends a reply whose final message is ``message``, by its stop reason.

    A message still ``"pending"`` never got a stop reason: it becomes an error.
    """
    reason = message.stop_reason
    if reason == "pending":
        message.stop_reason = "error"
        message.error_message = message.error_message or NO_STOP_REASON
        return StreamError("error", message)
    if reason == "error" or reason == "aborted":
        return StreamError(reason, message)
    return StreamDone(reason, message)


AssistantMessageEvent: TypeAlias = (
    StreamStart
    | TextStart
    | TextDelta
    | TextEnd
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | StreamDone
    | StreamError
)
"""One event of a provider's reply stream."""


# --- agent events -------------------------------------------------------------------------------


@attrs.frozen
class AgentStart:
    """A run has started."""

    type: ClassVar[Literal["agent_start"]] = "agent_start"


@attrs.frozen
class AgentEnd:
    """The run is over; ``messages`` are its new messages."""

    type: ClassVar[Literal["agent_end"]] = "agent_end"
    messages: list[AgentMessage] = attrs.field(hash=False)


@attrs.frozen
class TurnStart:
    """A turn (pending messages, one model call, its tool batch) has started."""

    type: ClassVar[Literal["turn_start"]] = "turn_start"


@attrs.frozen
class TurnEnd:
    """A turn is over: its assistant message and the tool results, in source order."""

    type: ClassVar[Literal["turn_end"]] = "turn_end"
    message: AssistantMessage
    tool_results: list[ToolResultMessage] = attrs.field(hash=False)


@attrs.frozen
class MessageStart:
    """A message enters the transcript (for the assistant: a shallow copy of the live partial)."""

    type: ClassVar[Literal["message_start"]] = "message_start"
    message: AgentMessage


@attrs.frozen
class MessageUpdate:
    """The streaming assistant message changed; the provider's raw event is attached.

    ``message`` is a shallow copy of the live partial: its content list and blocks are shared
    with the stream and go on growing after this event (see the concepts page)."""

    type: ClassVar[Literal["message_update"]] = "message_update"
    message: AssistantMessage
    assistant_message_event: AssistantMessageEvent


@attrs.frozen
class MessageEnd:
    """A message is complete and part of the transcript."""

    type: ClassVar[Literal["message_end"]] = "message_end"
    message: AgentMessage


@attrs.frozen
class ToolExecutionStart:
    """A tool call starts; ``args`` are the raw arguments from the model."""

    type: ClassVar[Literal["tool_execution_start"]] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: Any = attrs.field(hash=False)


@attrs.frozen
class ToolExecutionUpdate:
    """A running tool reported progress."""

    type: ClassVar[Literal["tool_execution_update"]] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: Any = attrs.field(hash=False)
    partial_result: AgentToolResult


@attrs.frozen
class ToolExecutionEnd:
    """A tool call is finished; ``result`` is final (after ``after_tool_call``)."""

    type: ClassVar[Literal["tool_execution_end"]] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    duration_ms: float | None = None
    """Milliseconds spent in ``execute`` (monotonic); ``None`` when the call did not run."""


AgentEvent: TypeAlias = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
)
"""One event of an agent run."""

Emit: TypeAlias = Callable[[AgentEvent], object]
"""``emit(event)``, the receiver of a run's events: sync or async; what a sync one returns is
ignored (unless it is awaitable), an async one is awaited before the run goes on."""

AwaitingEmit: TypeAlias = Callable[[AgentEvent], Awaitable[None]]
"""An :data:`Emit` as a run calls it: whatever it returns is awaited."""
