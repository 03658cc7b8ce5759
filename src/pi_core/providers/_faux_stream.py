"""The stateless half of a faux reply's stream: its events and upstream's text estimates.

:class:`PartialReply` turns a finished scripted message into stream events block by block, each
carrying a snapshot of the reply so far, and :func:`terminal` gives the event that ends it. The
text estimates follow upstream's serialization (a token is four characters): the text a block
streams, and the prompt a context makes for usage and the prompt-cache simulation.
:class:`~pi_core.providers.faux.FauxProvider` keeps the state — the queue, the chunk generator,
the pacing and the prompt cache — and uses these; :class:`~pi_core.testing.ScriptedStream` streams
its replies with :class:`PartialReply` too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

import attrs

from .._events import (
    StreamDone,
    StreamError,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .._messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    now_ms,
)
from .._texts import REQUEST_ABORTED
from ..nursery import AbortSignal

__all__ = [
    "PartialReply",
    "aborted",
    "assistant_text",
    "common_prefix_length",
    "estimate_tokens",
    "serialize_context",
    "streamed_text",
    "terminal",
]


# --- the partial message ------------------------------------------------------------------------


class PartialReply:
    """The reply as streamed so far; each event gets a snapshot of it.

    Upstream shares one partial and grows its blocks in place, so an early event's ``partial``
    later shows text that came after it. Here a block is replaced, never changed, once an event
    holds it: every event's ``partial`` stays what it was when the event was sent. The snapshots
    share the final message's ``usage``, which nothing changes.
    """

    __slots__ = ("_content", "_final", "_so_far")

    def __init__(self, final: AssistantMessage) -> None:
        self._final = final
        self._content: list[AssistantContent] = []
        self._so_far = ""

    def snapshot(self) -> AssistantMessage:
        """The final message with the content streamed so far (its stop reason, usage, error)."""
        partial = self._final.shallow_copy()
        partial.content = list(self._content)
        return partial

    def aborted(self) -> StreamError:
        """The terminal event of an abort: the content so far, stopped as ``aborted``."""
        message = self.snapshot()
        message.stop_reason = "aborted"
        message.error_message = REQUEST_ABORTED
        message.timestamp = now_ms()
        return StreamError("aborted", message)

    def open_block(
        self, index: int, block: AssistantContent
    ) -> TextStart | ThinkingStart | ToolCallStart:
        """Start ``block`` empty (a tool call with arguments ``{}``)."""
        self._so_far = ""
        if isinstance(block, TextContent):
            self._content.append(TextContent(""))
            return TextStart(index, self.snapshot())
        if isinstance(block, ThinkingContent):
            self._content.append(ThinkingContent("", redacted=block.redacted))
            return ThinkingStart(index, self.snapshot())
        self._content.append(ToolCall(block.id, block.name, {}))
        return ToolCallStart(index, self.snapshot())

    def add_chunk(
        self, index: int, block: AssistantContent, chunk: str
    ) -> TextDelta | ThinkingDelta | ToolCallDelta:
        """Append ``chunk``; a tool call's arguments stay ``{}`` until the block ends."""
        self._so_far += chunk
        if isinstance(block, TextContent):
            self._content[index] = TextContent(self._so_far)
            return TextDelta(index, chunk, self.snapshot())
        if isinstance(block, ThinkingContent):
            self._content[index] = ThinkingContent(self._so_far, redacted=block.redacted)
            return ThinkingDelta(index, chunk, self.snapshot())
        return ToolCallDelta(index, chunk, self.snapshot())

    def close_block(
        self, index: int, block: AssistantContent
    ) -> TextEnd | ThinkingEnd | ToolCallEnd:
        """Complete ``block``: the partial now holds a copy of the final block, signatures too."""
        self._content[index] = attrs.evolve(block)
        if isinstance(block, TextContent):
            return TextEnd(index, block.text, self.snapshot())
        if isinstance(block, ThinkingContent):
            return ThinkingEnd(index, block.thinking, self.snapshot())
        return ToolCallEnd(index, block, self.snapshot())


def aborted(signal: AbortSignal | None) -> bool:
    return signal is not None and signal.aborted


def terminal(message: AssistantMessage) -> StreamDone | StreamError:
    reason = message.stop_reason
    if reason == "error" or reason == "aborted":
        return StreamError(reason, message)
    return StreamDone(reason, message)


# --- text estimates (upstream's serialization, token = four characters) -------------------------


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def common_prefix_length(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share from the start.

    A binary search over slice comparisons: the comparing runs in C, not a Python loop per
    character (megabytes of prompt would hold the event loop for a second).
    """
    matched, length = 0, min(len(a), len(b))
    if a[:length] == b[:length]:
        return length
    unmatched = length  # invariant: a[:matched] == b[:matched], a[:unmatched] != b[:unmatched]
    while unmatched - matched > 1:
        middle = (matched + unmatched) // 2
        if a[matched:middle] == b[matched:middle]:
            matched = middle
        else:
            unmatched = middle
    return matched


def _json(value: object) -> str:
    # JSON.stringify's compact form, so that the estimates match upstream's.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def streamed_text(block: AssistantContent) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ThinkingContent):
        return block.thinking
    return _json(block.arguments)


def serialize_context(context: Context) -> str:
    parts: list[str] = []
    if context.system_prompt:
        parts.append(f"system:{context.system_prompt}")
    parts.extend(f"{message.role}:{_message_text(message)}" for message in context.messages)
    if context.tools:
        tools = [
            {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
            for tool in context.tools
        ]
        parts.append(f"tools:{_json(tools)}")
    return "\n\n".join(parts)


def _message_text(message: Message) -> str:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return message.content
        return "\n".join(_user_block_text(block) for block in message.content)
    if isinstance(message, AssistantMessage):
        return assistant_text(message.content)
    return "\n".join([message.tool_name, *(_user_block_text(b) for b in message.content)])


def _user_block_text(block: TextContent | ImageContent) -> str:
    if isinstance(block, TextContent):
        return block.text
    return f"[image:{block.mime_type}:{len(block.data)}]"


def assistant_text(content: Iterable[AssistantContent]) -> str:
    return "\n".join(
        f"{block.name}:{_json(block.arguments)}"
        if isinstance(block, ToolCall)
        else streamed_text(block)
        for block in content
    )
