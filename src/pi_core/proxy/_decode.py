"""The client side of the proxy wire format: rebuilding a reply from its ``data:`` lines.

Upstream's server strips ``partial`` from every event to save bandwidth; the client rebuilds one
mutable partial message from the events and hands that same object out with each of them, as
upstream's ``processProxyEvent`` does. Events of unknown types are skipped with a warning;
malformed ones are protocol errors (:class:`~pi_core.ProxyError`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

import attrs
import jiter

from .. import (
    AssistantMessage,
    AssistantMessageEvent,
    Model,
    ProxyError,
    StreamDone,
    StreamError,
    StreamStart,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingContent,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from .._http import MAX_LINE_BYTES
from .._texts import clip
from ..providers._partial import StreamingJson, append_text, append_thinking
from ..serialization import from_dict, to_dict

__all__ = ["WireDecoder", "parse_streaming_json"]

_PREVIEW = 200
"""Characters of a malformed event quoted in an error."""
_log = logging.getLogger("pi_core.proxy")

_DATA = b"data: "
_DONE_REASONS: tuple[Literal["stop", "length", "toolUse", "deferred"], ...] = (
    "stop",
    "length",
    "toolUse",
    "deferred",
)
_ERROR_REASONS: tuple[Literal["aborted", "error"], ...] = ("aborted", "error")

_B = TypeVar("_B", TextContent, ThinkingContent, ToolCall)
_S = TypeVar("_S", bound=str)
_Handler = Callable[["WireDecoder", dict[str, Any]], AssistantMessageEvent | None]


class WireDecoder:
    """Reads a proxy response body and rebuilds the stream events of one reply.

    Every event carries the same :attr:`partial` message, which is also the message of the
    terminal event, as in upstream's client. Feed the body in chunks of any size; a line counts
    once its newline has arrived, or at the end of the body (:meth:`flush`): a server that ends
    its last line without a newline still gets it read. Only lines starting with ``data: `` are
    read.
    """

    __slots__ = ("_buffer", "_json", "partial", "started", "terminal")

    def __init__(self, model: Model) -> None:
        self.partial = AssistantMessage(
            [], model.api, model.provider, model.id, stop_reason="pending"
        )
        self.started = False
        self.terminal: StreamDone | StreamError | None = None
        self._buffer = bytearray()
        self._json: dict[int, StreamingJson] = {}

    def feed(self, chunk: bytes) -> Iterator[AssistantMessageEvent]:
        """The events completed by ``chunk``, one by one; the terminal event, if any, is the
        last one, and nothing is read after it.

        Raises:
            ProxyError: a line is not JSON, or an event is malformed or contradicts the message.
                The events of the lines before it have been produced.
        """
        if self.terminal is not None:
            return
        self._buffer += chunk
        if b"\n" not in chunk:
            if len(self._buffer) > MAX_LINE_BYTES:
                raise ProxyError(
                    f"A line of the proxy stream is longer than {MAX_LINE_BYTES} bytes"
                )
            return
        *lines, rest = self._buffer.split(b"\n")
        self._buffer = bytearray(rest)
        for line in lines:
            if self.terminal is None and line.startswith(_DATA):
                yield from self._read_line(line)

    def flush(self) -> Iterator[AssistantMessageEvent]:
        """The events of the body's last line, when it ended without a newline.

        Raises:
            ProxyError: as :meth:`feed`.
        """
        rest, self._buffer = self._buffer, bytearray()
        if self.terminal is None and rest.startswith(_DATA):
            yield from self._read_line(rest)

    def fail(self, reason: Literal["aborted", "error"], error_message: str) -> StreamError:
        """The terminal event of a failed call: the partial so far, stopped with ``reason``."""
        self.partial.stop_reason = reason
        self.partial.error_message = error_message
        self.terminal = StreamError(reason, self.partial)
        return self.terminal

    def _read_line(self, line: bytes | bytearray) -> Iterator[AssistantMessageEvent]:
        payload = line[len(_DATA) :].decode("utf-8", "replace").strip()
        if not payload:
            return
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise ProxyError(
                f"Invalid JSON in proxy stream: {exc}: {clip(payload, _PREVIEW)}"
            ) from None
        if not isinstance(data, dict):
            raise ProxyError(
                f"Malformed proxy event: expected a JSON object: {clip(payload, _PREVIEW)}"
            )
        event = self._event(data)
        if event is None:
            return
        if not self.started and not isinstance(event, (StreamDone, StreamError)):
            # Our stream protocol opens with ``start``; a server that skipped it still gets one.
            self.started = True
            if not isinstance(event, StreamStart):
                yield StreamStart(self.partial)
        if isinstance(event, (StreamDone, StreamError)):
            self.terminal = event
        yield event

    def _event(self, data: dict[str, Any]) -> AssistantMessageEvent | None:
        kind = data.get("type")
        if not isinstance(kind, str):
            raise ProxyError(
                f"Malformed proxy event: no type in {clip(json.dumps(data), _PREVIEW)}"
            )
        handler = _HANDLERS.get(kind)
        if handler is None:
            _log.warning("Unhandled proxy event type: %s", clip(kind, _PREVIEW))
            return None
        return handler(self, data)

    # --- one method per wire event, as upstream's processProxyEvent ---------------------

    def _start(self, _data: dict[str, Any]) -> StreamStart | None:
        if self.started:
            return None  # a repeated start would break the one-start protocol
        self.started = True
        return StreamStart(self.partial)

    def _text_start(self, data: dict[str, Any]) -> TextStart:
        index = self._place(data, TextContent(""))
        return TextStart(index, self.partial)

    def _text_delta(self, data: dict[str, Any]) -> TextDelta:
        index, block = self._block(data, TextContent, "Received text_delta for non-text content")
        delta = _string(data, "delta")
        append_text(block, delta)
        return TextDelta(index, delta, self.partial)

    def _text_end(self, data: dict[str, Any]) -> TextEnd:
        index, block = self._block(data, TextContent, "Received text_end for non-text content")
        block.text_signature = _signature(data)
        return TextEnd(index, block.text, self.partial)

    def _thinking_start(self, data: dict[str, Any]) -> ThinkingStart:
        index = self._place(data, ThinkingContent(""))
        return ThinkingStart(index, self.partial)

    def _thinking_delta(self, data: dict[str, Any]) -> ThinkingDelta:
        message = "Received thinking_delta for non-thinking content"
        index, block = self._block(data, ThinkingContent, message)
        delta = _string(data, "delta")
        append_thinking(block, delta)
        return ThinkingDelta(index, delta, self.partial)

    def _thinking_end(self, data: dict[str, Any]) -> ThinkingEnd:
        message = "Received thinking_end for non-thinking content"
        index, block = self._block(data, ThinkingContent, message)
        block.thinking_signature = _signature(data)
        return ThinkingEnd(index, block.thinking, self.partial)

    def _toolcall_start(self, data: dict[str, Any]) -> ToolCallStart:
        call = ToolCall(_string(data, "id"), _string(data, "toolName"), {})
        index = self._place(data, call)
        self._json[index] = StreamingJson(_parse_streaming)
        return ToolCallStart(index, self.partial)

    def _toolcall_delta(self, data: dict[str, Any]) -> ToolCallDelta:
        message = "Received toolcall_delta for non-toolCall content"
        index, block = self._block(data, ToolCall, message)
        delta = _string(data, "delta")
        streaming = self._json.get(index)
        if streaming is None:
            self._json[index] = streaming = StreamingJson(_parse_streaming)
        # A new block, as upstream's spread copy: an earlier event's block keeps its arguments.
        self.partial.content[index] = attrs.evolve(block, arguments=streaming.add(delta))
        return ToolCallDelta(index, delta, self.partial)

    def _toolcall_end(self, data: dict[str, Any]) -> ToolCallEnd | None:
        index = _index(data)
        content = self.partial.content
        block = content[index] if index < len(content) else None
        if not isinstance(block, ToolCall):
            return None  # upstream ignores it without an error
        streaming = self._json.pop(index, None)
        sent = data.get("toolCall")
        if sent is not None:
            # The server's complete call wins over the one rebuilt from the deltas.
            block = content[index] = _completed_call(block, sent)
        elif streaming is not None and streaming.current() is not block.arguments:
            # Large arguments are parsed now and then while they stream: read all of them.
            block = content[index] = attrs.evolve(block, arguments=streaming.current())
        return ToolCallEnd(index, block, self.partial)

    def _done(self, data: dict[str, Any]) -> StreamDone:
        reason = _choice(data, "reason", _DONE_REASONS)
        self.partial.usage = self._usage(data)
        self.partial.stop_reason = reason
        self._thinking_level(data)
        return StreamDone(reason, self.partial)

    def _error(self, data: dict[str, Any]) -> StreamError:
        reason = _choice(data, "reason", _ERROR_REASONS)
        error_message = data.get("errorMessage")
        if error_message is not None and not isinstance(error_message, str):
            raise ProxyError(
                f"Malformed proxy event error: errorMessage is {clip(repr(error_message), _PREVIEW)}"
            )
        self.partial.usage = self._usage(data)
        self.partial.stop_reason = reason
        self.partial.error_message = error_message
        self._thinking_level(data)
        return StreamError(reason, self.partial)

    # --- helpers ----------------------------------------------------------------------------

    def _place(self, data: dict[str, Any], block: TextContent | ThinkingContent | ToolCall) -> int:
        """Put a new block at the event's index: replace one there, or append at the end."""
        index = _index(data)
        content = self.partial.content
        if index < len(content):
            content[index] = block
        elif index == len(content):
            content.append(block)
        else:
            raise ProxyError(
                f"Malformed proxy event {data['type']}: contentIndex {index} skips past the "
                f"end of the content ({len(content)} blocks)"
            )
        return index

    def _block(self, data: dict[str, Any], cls: type[_B], message: str) -> tuple[int, _B]:
        index = _index(data)
        content = self.partial.content
        block = content[index] if index < len(content) else None
        if not isinstance(block, cls):
            raise ProxyError(message)
        return index, block

    def _thinking_level(self, data: dict[str, Any]) -> None:
        """The provider's exact reasoning effort of a terminal event, when it carries one."""
        if data.get("providerThinkingLevel") is not None:
            self.partial.provider_thinking_level = _string(data, "providerThinkingLevel")

    def _usage(self, data: dict[str, Any]) -> Usage:
        raw = data.get("usage")
        if raw is None:
            return self.partial.usage
        try:
            return from_dict(raw, Usage)
        except ValueError as exc:
            raise ProxyError(f"Malformed proxy event {data['type']}: {exc}") from None


_HANDLERS: dict[str, _Handler] = {
    "start": WireDecoder._start,
    "text_start": WireDecoder._text_start,
    "text_delta": WireDecoder._text_delta,
    "text_end": WireDecoder._text_end,
    "thinking_start": WireDecoder._thinking_start,
    "thinking_delta": WireDecoder._thinking_delta,
    "thinking_end": WireDecoder._thinking_end,
    "toolcall_start": WireDecoder._toolcall_start,
    "toolcall_delta": WireDecoder._toolcall_delta,
    "toolcall_end": WireDecoder._toolcall_end,
    "done": WireDecoder._done,
    "error": WireDecoder._error,
}


def _completed_call(block: ToolCall, sent: Any) -> ToolCall:
    """``block`` with the fields of the ``toolCall`` a ``toolcall_end`` carries laid over it,
    as upstream's client assigns them: the fields it leaves out keep their streamed values."""
    if not isinstance(sent, dict):
        raise ProxyError(
            f"Malformed proxy event toolcall_end: toolCall is {clip(repr(sent), _PREVIEW)}"
        )
    try:
        return from_dict({**to_dict(block), **sent}, ToolCall)
    except ValueError as exc:
        raise ProxyError(f"Malformed proxy event toolcall_end: {exc}") from None


def _parse_streaming(text: str, previous: dict[str, Any]) -> dict[str, Any]:
    return parse_streaming_json(text)


def parse_streaming_json(text: str) -> dict[str, Any]:
    """The object readable so far from incomplete JSON, unfinished strings kept as prefixes;
    ``{}`` when the text is not (the start of) an object, as upstream's ``parseStreamingJson``."""
    try:
        value = jiter.from_json(text.encode(), partial_mode="trailing-strings")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# --- reading fields of a wire event -----------------------------------------------------------
# Upstream's client takes fields as they come; a field of the wrong kind here is a protocol error
# with the event's name, rather than "undefined" appended to the text.


def _index(data: dict[str, Any]) -> int:
    value = data.get("contentIndex")
    if type(value) is not int or value < 0:
        raise ProxyError(
            f"Malformed proxy event {data['type']}: contentIndex is {clip(repr(value), _PREVIEW)}"
        )
    return value


def _string(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ProxyError(
            f"Malformed proxy event {data['type']}: {key} is {clip(repr(value), _PREVIEW)}"
        )
    return value


def _signature(data: dict[str, Any]) -> str | None:
    value = data.get("contentSignature")
    return None if value is None else _string(data, "contentSignature")


def _choice(data: dict[str, Any], key: str, allowed: tuple[_S, ...]) -> _S:
    value = data.get(key)
    for choice in allowed:
        if value == choice:
            return choice
    raise ProxyError(
        f"Malformed proxy event {data['type']}: {key} is {clip(repr(value), _PREVIEW)}"
    )
