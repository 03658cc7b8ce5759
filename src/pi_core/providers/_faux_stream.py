"""The stateless half of a faux reply's stream: its events and upstream's text estimates.

:class:`PartialReply` turns a finished scripted message into stream events block by block, built
by the providers' own :class:`~pi_core.providers._partial.PartialMessage`, and :func:`terminal`
gives the event that ends it. The
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
    AssistantMessageEvent,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    TextStart,
    ThinkingDelta,
    ThinkingStart,
    ToolCallDelta,
    ToolCallStart,
    terminal_event,
)
from .._messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    UserMessage,
    now_ms,
)
from .._system import provider_transcript, render_system_update
from .._texts import REQUEST_ABORTED
from ..nursery import AbortSignal
from ._partial import PartialMessage

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
    """A finished reply streamed again block by block, built by :class:`PartialMessage`.

    A scripted model's events are a real provider's: every event carries the same live partial
    (:attr:`message`), which grows as the reply streams, and becomes the final message. A
    block, once ended, is the scripted block: its signatures and its exact arguments (a tool
    call's arguments parse from the streamed JSON until then, as a provider's do).
    """

    __slots__ = ("_partial",)

    def __init__(self, final: AssistantMessage) -> None:
        self._partial = PartialMessage.replaying(final)

    @property
    def message(self) -> AssistantMessage:
        """The live partial: the final message once every block has ended."""
        return self._partial.message

    def start(self) -> StreamStart:
        """The first event: the reply without content (its stop reason, usage and error)."""
        return self._partial.start()

    def aborted(self) -> StreamError:
        """The terminal event of an abort: the content so far, stopped as ``aborted``."""
        event = self._partial.fail("aborted", REQUEST_ABORTED)
        event.error.timestamp = now_ms()
        return event

    def open_block(self, block: AssistantContent) -> TextStart | ThinkingStart | ToolCallStart:
        """Start ``block`` empty (a tool call with arguments ``{}``) at the end of the content."""
        if isinstance(block, TextContent):
            return self._partial.begin_text()
        if isinstance(block, ThinkingContent):
            return self._partial.begin_thinking(redacted=block.redacted)
        return self._partial.begin_tool_call(block.id, block.name)

    def add_chunk(
        self, index: int, block: AssistantContent, chunk: str
    ) -> TextDelta | ThinkingDelta | ToolCallDelta:
        """Append ``chunk`` of ``block``'s streamed text to the block at ``index``."""
        partial = self._partial
        if isinstance(block, TextContent):
            return partial.add_text(index, chunk)
        if isinstance(block, ThinkingContent):
            return partial.add_thinking(index, chunk)
        event = partial.add_tool_json(index, chunk)
        assert event is not None  # the block is open
        return event

    def close_block(self, index: int, block: AssistantContent) -> AssistantMessageEvent:
        """End the block at ``index``: it becomes a copy of ``block``, signatures too."""
        event = self._partial.end_block(index)
        assert event is not None  # the block is open
        live = self.message.content[index]
        for field in attrs.fields(type(block)):
            setattr(live, field.name, getattr(block, field.name))
        return event

    def done(self) -> StreamDone | StreamError:
        """The terminal event of a reply streamed whole, carrying the live partial."""
        return terminal(self.message)


def aborted(signal: AbortSignal | None) -> bool:
    return signal is not None and signal.aborted


def terminal(message: AssistantMessage) -> StreamDone | StreamError:
    return terminal_event(message)


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
    """The prompt text a context makes: the system prompt the transcript declares (later system
    messages collapsed into it, one ``tool+:`` line per tool), then one text per message."""
    transcript = provider_transcript(context)
    parts: list[str] = []
    if transcript.system_prompt or transcript.tools:
        lines = [f"system:{transcript.system_prompt}"]
        lines.extend(f"tool+:{_json(_declaration_json(tool))}" for tool in transcript.tools)
        parts.append("\n".join(lines))
    parts.extend(f"{message.role}:{_message_text(message)}" for message in transcript.messages)
    return "\n\n".join(parts)


def _declaration_json(tool: Tool) -> dict[str, object]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


def _message_text(message: Message) -> str:
    if isinstance(message, SystemMessage):
        return render_system_update(message)
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
