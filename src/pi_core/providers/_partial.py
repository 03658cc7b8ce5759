"""The assistant message a provider builds while it streams, and the events that describe it.

:class:`PartialMessage` owns the message and hands out the protocol events with the right
``content_index``: every ``begin_*`` appends a block, every ``add_*`` grows it, ``end_block``
closes it. Providers translate their wire events into these calls and never build events by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jiter

from .._events import (
    AssistantMessageEvent,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    terminal_event,
)
from .._messages import (
    AssistantMessage,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = [
    "PartialMessage",
    "StreamingJson",
    "append_text",
    "append_thinking",
    "parse_final_json",
    "parse_partial_json",
]

_ALWAYS_PARSED_CHARS = 8 * 1024
"""Arguments up to this size are re-parsed on every fragment: what a UI shows is exact."""
_PARSE_GROWTH = 1.25
"""Past that size, they are re-parsed once the text has grown by a quarter since the last parse:
parsing stays linear in the size of the arguments instead of quadratic (a model writing a file
through a tool sends hundreds of KiB in fragments of a few characters)."""


class StreamingJson:
    """The JSON text of a tool call's arguments as it streams in, and the object read from it.

    Fragments are kept in a list and joined only to parse, and large texts are parsed at
    geometrically spaced sizes (see :data:`_PARSE_GROWTH`); :meth:`current` parses whatever
    arrived since, so the end of a call always sees all of it.

    Args:
        parse: ``parse(text, previous)`` → the object readable from ``text``.
    """

    __slots__ = ("_fragments", "_length", "_next_parse", "_parse", "_parsed", "value")

    def __init__(self, parse: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        self._parse = parse
        self._fragments: list[str] = []
        self._length = 0
        self._next_parse = 0
        self._parsed = True
        self.value: dict[str, Any] = {}
        """The object read at the last parse."""

    @property
    def text(self) -> str:
        """Everything received so far."""
        if len(self._fragments) > 1:
            self._fragments[:] = ["".join(self._fragments)]
        return self._fragments[0] if self._fragments else ""

    def add(self, fragment: str) -> dict[str, Any]:
        """Take the next fragment; return the object, re-parsed if it is due."""
        self._fragments.append(fragment)
        self._length += len(fragment)
        self._parsed = False
        if self._length >= self._next_parse or self._length <= _ALWAYS_PARSED_CHARS:
            return self.current()
        return self.value

    def current(self) -> dict[str, Any]:
        """The object read from everything received so far."""
        if not self._parsed:
            self.value = self._parse(self.text, self.value)
            self._parsed = True
            self._next_parse = int(self._length * _PARSE_GROWTH)
        return self.value


def parse_partial_json(text: str, previous: dict[str, Any]) -> dict[str, Any]:
    """The arguments readable so far from an incomplete JSON object.

    Unfinished strings are kept as prefixes so a UI can show them growing. When the text is not
    (yet) an object, ``previous`` is returned, so the arguments never go backwards.
    """
    if not text.strip():
        return previous
    try:
        value = jiter.from_json(text.encode(), partial_mode="trailing-strings")
    except ValueError:
        # A raw control character or an invalid escape inside a string: shown as the model
        # wrote it (as the final parse will read it) rather than not at all until the end.
        repaired = repair_strings(text, partial=True)
        try:
            value = jiter.from_json(repaired.encode(), partial_mode="trailing-strings")
        except ValueError:
            return previous
    return value if isinstance(value, dict) else previous


_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def repair_strings(text: str, *, partial: bool = False) -> str:
    """``text`` with the two flaws models make inside JSON strings mended: a raw control
    character becomes its escape, and a backslash that starts no valid escape (``\\d``) is
    doubled, so it stays literal text. Outside strings nothing changes. With ``partial``, a
    backslash that ends the text is left out, since the escape it starts has not arrived."""
    out: list[str] = []
    in_string = False
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        index += 1
        if not in_string:
            in_string = char == '"'
            out.append(char)
        elif char == '"':
            in_string = False
            out.append(char)
        elif char == "\\":
            following = text[index] if index < end else ""
            if partial and (not following or (following == "u" and end - index < 5)):
                break  # an escape still arriving is held back
            if not following:
                out.append("\\\\")
            elif following in _VALID_ESCAPES and (following != "u" or _hex4(text, index + 1)):
                out.append(char + following)
                index += 1
            else:
                out.append("\\\\")
        elif char < " ":
            out.append(_CONTROL_ESCAPES.get(char) or f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def _hex4(text: str, start: int) -> bool:
    digits = text[start : start + 4]
    return len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits)


def parse_final_json(text: str) -> tuple[dict[str, Any], str | None]:
    """The arguments of a finished tool call, and why they are not usable (``None`` when they
    are).

    JSON that is whole but not quite valid (a raw newline or tab inside a string, an invalid
    escape such as ``\\d``) is mended (:func:`repair_strings`) into the values the model meant.
    Anything else that is not a JSON object (malformed text, or JSON cut off by ``max_tokens``)
    gives ``{}`` and an error naming the problem and quoting the text, which validation hands
    back to the model: no part of a truncated call (a cut path or command) reaches a tool.
    """
    if not text.strip():
        return {}, None
    try:
        value = jiter.from_json(text.encode())
    except ValueError as failure:
        repaired = repair_strings(text)
        try:
            if repaired == text:
                raise
            value = jiter.from_json(repaired.encode())
        except ValueError:
            return {}, f"{failure}\n\nReceived arguments:\n{text}"
    if not isinstance(value, dict):
        return {}, f"Tool arguments must be a JSON object\n\nReceived arguments:\n{text}"
    return value, None


def append_text(block: TextContent, delta: str) -> None:
    """Append ``delta`` to ``block.text`` in amortized constant time.

    ``block.text += delta`` copies the whole text at every delta, so a reply of a million tiny
    deltas costs minutes. Taken off the block, the string has one reference, and CPython then
    grows it in place.
    """
    text = block.text
    block.text = ""
    text += delta
    block.text = text


def append_thinking(block: ThinkingContent, delta: str) -> None:
    """Append ``delta`` to ``block.thinking`` in amortized constant time (see :func:`append_text`)."""
    thinking = block.thinking
    block.thinking = ""
    thinking += delta
    block.thinking = thinking


class PartialMessage:
    """An :class:`AssistantMessage` under construction plus the events of each change.

    Every event carries :attr:`message` itself as ``partial`` (not a copy), as upstream does,
    and the terminal event carries it as the final message. It is live: ``content`` grows by a
    block at each ``begin_*``, a text or thinking block's string grows at each ``add_*``, and a
    tool call's ``arguments`` are replaced by a new dict as they parse. Consumers that keep a
    partial as it was copy it.
    """

    __slots__ = ("_held", "_json", "_open", "message")

    def __init__(self, model: Model) -> None:
        # "pending" until the provider says why the reply ended.
        self._begin(
            AssistantMessage([], model.api, model.provider, model.id, stop_reason="pending")
        )

    @classmethod
    def replaying(cls, reply: AssistantMessage) -> PartialMessage:
        """A partial that streams the finished ``reply`` again (a scripted model's reply).

        It starts as ``reply`` without content, so its stop reason, usage, error and ids are
        there from the first event; ``reply`` itself is not changed.
        """
        partial = cls.__new__(cls)
        message = reply.shallow_copy()
        message.content = []
        partial._begin(message)
        return partial

    def _begin(self, message: AssistantMessage) -> None:
        self.message = message
        self._open: set[int] = set()
        self._json: dict[int, StreamingJson] = {}
        self._held: dict[int, str] = {}
        """A block's last high surrogate, held back until its low half arrives."""

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> StreamStart:
        """The first event of a reply."""
        return StreamStart(self.message)

    def done(self) -> StreamDone | StreamError:
        """The terminal event of a reply that arrived whole.

        A reply the provider stopped for a policy reason (``stop_reason`` ``"error"``) ends as a
        :class:`StreamError` all the same, so the loop does not run its tool calls.
        """
        reason = self.message.stop_reason
        if (reason == "error" or reason == "aborted") and self.message.error_message is None:
            self.message.error_message = "The provider stopped the response with an error"
        return terminal_event(self.message)

    def fail(self, reason: StopReason, error_message: str) -> StreamError:
        """The terminal event of a failed (``"error"``) or aborted reply; content is kept."""
        self.message.stop_reason = "aborted" if reason == "aborted" else "error"
        self.message.error_message = error_message
        return StreamError(self.message.stop_reason, self.message)

    def set_usage(self, usage: Usage) -> None:
        """Replace the token counts (providers report cumulative counts)."""
        self.message.usage = usage

    # --- blocks ----------------------------------------------------------------------------

    def begin_text(self) -> TextStart:
        """Open a text block at the end of the content."""
        index = self._append(TextContent(""))
        return TextStart(index, self.message)

    def add_text(self, index: int, delta: str) -> TextDelta:
        """Append ``delta`` to the text block at ``index``."""
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        delta = self._whole_characters(index, delta)
        append_text(block, delta)
        return TextDelta(index, delta, self.message)

    def begin_thinking(
        self, thinking: str = "", *, signature: str | None = None, redacted: bool = False
    ) -> ThinkingStart:
        """Open a thinking block at the end of the content."""
        index = self._append(ThinkingContent(thinking, signature, redacted))
        return ThinkingStart(index, self.message)

    def add_thinking(self, index: int, delta: str) -> ThinkingDelta:
        """Append ``delta`` to the thinking block at ``index``."""
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        delta = self._whole_characters(index, delta)
        append_thinking(block, delta)
        return ThinkingDelta(index, delta, self.message)

    def _whole_characters(self, index: int, delta: str) -> str:
        """``delta`` without a split UTF-16 surrogate pair: a trailing high surrogate waits for
        the next delta of the block, and the two halves become the one character they encode.
        (A server that cuts ``\\ud83d\\ude00`` between two JSON strings sends lone halves,
        which no UTF-8 encoder takes.)"""
        held = self._held.pop(index, None)
        if delta and "\ud800" <= delta[-1] <= "\udbff":
            self._held[index] = delta[-1]
            delta = delta[:-1]
        if held is not None:  # pair the halves; a half without its partner becomes U+FFFD
            delta = (
                (held + delta).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
            )
        return delta

    def add_thinking_signature(self, index: int, fragment: str) -> None:
        """Append to the signature of the thinking block at ``index`` (no event: it is opaque)."""
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        block.thinking_signature = (block.thinking_signature or "") + fragment

    def begin_tool_call(
        self, call_id: str, name: str, arguments: dict[str, Any] | None = None
    ) -> ToolCallStart:
        """Open a tool call block; its arguments then grow from JSON fragments."""
        block = ToolCall(call_id, name, dict(arguments or {}))
        index = self._append(block)
        self._json[index] = streaming = StreamingJson(parse_partial_json)
        streaming.value = block.arguments
        return ToolCallStart(index, self.message)

    def tool_call(self, index: int) -> ToolCall:
        """The tool call block at ``index``."""
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        return block

    def add_tool_json(self, index: int, fragment: str) -> ToolCallDelta | None:
        """Append a raw JSON fragment to the arguments of the tool call at ``index``.

        The block's ``arguments`` become a new dict parsed from everything so far (for large
        arguments, from nearly everything: see :class:`StreamingJson`), so a consumer that kept
        the previous dict still holds its snapshot. A fragment for a call that was already
        closed (a server interleaving calls) still updates it but emits nothing, since nothing
        may follow a block's end.
        """
        block = self.tool_call(index)
        streaming = self._streaming(index)
        arguments = streaming.add(fragment)
        if index not in self._open:
            block.arguments, block.arguments_error = parse_final_json(streaming.text)
            return None
        block.arguments = arguments
        return ToolCallDelta(index, fragment, self.message)

    def tool_json(self, index: int) -> str:
        """The raw JSON text of the arguments of the tool call at ``index``, as received."""
        streaming = self._json.get(index)
        return streaming.text if streaming is not None else ""

    def _streaming(self, index: int) -> StreamingJson:
        streaming = self._json.get(index)
        if streaming is None:
            self._json[index] = streaming = StreamingJson(parse_partial_json)
        return streaming

    def is_open(self, index: int) -> bool:
        """True while the block at ``index`` has started and not ended."""
        return index in self._open

    def end_block(self, index: int) -> AssistantMessageEvent | None:
        """Close the block at ``index``; ``None`` if it is not open."""
        if index not in self._open:
            return None
        self._open.discard(index)
        self._held.pop(index, None)  # half a character that never got its other half
        block = self.message.content[index]
        if isinstance(block, TextContent):
            return TextEnd(index, block.text, self.message)
        if isinstance(block, ThinkingContent):
            return ThinkingEnd(index, block.thinking, self.message)
        text = self.tool_json(index)
        if text.strip():
            block.arguments, block.arguments_error = parse_final_json(text)
        return ToolCallEnd(index, block, self.message)

    def end_all(self) -> list[AssistantMessageEvent]:
        """Close every open block, in content order."""
        events = [self.end_block(index) for index in sorted(self._open)]
        return [event for event in events if event is not None]

    def _append(self, block: TextContent | ThinkingContent | ToolCall) -> int:
        self.message.content.append(block)
        index = len(self.message.content) - 1
        self._open.add(index)
        return index
