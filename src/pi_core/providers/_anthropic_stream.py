"""Anthropic Messages stream events → the stream protocol (see :mod:`.anthropic` for the map)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from httpx_sse import ServerSentEvent

from .._events import AssistantMessageEvent, TextStart, ThinkingStart, ToolCallStart
from .._messages import Model, StopReason
from ._common import StreamFailure, error_body_message, make_usage, parse_event_json
from ._partial import PartialMessage

__all__ = ["REDACTED_THINKING_TEXT", "EventMapper"]

REDACTED_THINKING_TEXT = "[Reasoning redacted]"
"""The ``thinking`` text of a redacted block (its encrypted data is the signature)."""

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}
_REFUSED = "The model refused to complete the request"


class EventMapper:
    """Messages stream events → stream events."""

    def __init__(self, partial: PartialMessage, model: Model) -> None:
        self._partial = partial
        self._model = model
        self._blocks: dict[int, int] = {}
        """The server's block ``index`` → our content index (unknown block kinds are absent)."""
        self._done = False
        self._stopped = False
        self._usage: dict[str, int] = {}

    @property
    def done(self) -> bool:
        """True after ``message_stop``."""
        return self._done

    def feed(self, sse: ServerSentEvent) -> Iterator[AssistantMessageEvent]:
        """The events of one server-sent event."""
        if not sse.data.strip():
            return
        data = parse_event_json(sse)
        kind = data.get("type") or sse.event
        if kind == "content_block_start":
            yield from self._block_start(data)
        elif kind == "content_block_delta":
            yield from self._block_delta(data)
        elif kind == "content_block_stop":
            yield from self._block_stop(data)
        elif kind == "message_start":
            self._message_start(data.get("message") or {})
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self._done = True
        elif kind == "error":
            raise StreamFailure(_stream_error_text(data))
        # "ping" and event kinds added later are ignored, as the API docs ask.

    def finish(self) -> Iterator[AssistantMessageEvent]:
        """Close open blocks; a stream without ``message_stop`` or a stop reason is incomplete."""
        yield from self._partial.end_all()
        if not self._done:
            raise StreamFailure("Anthropic stream ended before message_stop")
        if not self._stopped:
            raise StreamFailure("Anthropic stream ended without a stop reason")

    def _message_start(self, message: dict[str, Any]) -> None:
        partial = self._partial.message
        if message.get("id"):
            partial.response_id = str(message["id"])
        served = message.get("model")
        if served and served != self._model.id:
            partial.response_model = str(served)
        self._update_usage(message.get("usage"))

    def _message_delta(self, data: dict[str, Any]) -> None:
        delta = data.get("delta") or {}
        reason = delta.get("stop_reason")
        if reason:
            self._stopped = True
            message = self._partial.message
            message.raw_stop_reason = str(reason)
            known = _STOP_REASONS.get(reason)
            if known is not None:
                message.stop_reason = known
            else:
                message.stop_reason = "error"
                message.error_message = _stop_error_text(reason, delta.get("stop_details"))
        self._update_usage(data.get("usage"))

    def _update_usage(self, usage: object) -> None:
        """Counts are cumulative; a field left out (or null) keeps its earlier value."""
        if not isinstance(usage, dict):
            return
        for key, value in usage.items():
            if isinstance(value, int):
                self._usage[key] = value
        # The one-hour share of the cache writes, and the thinking share of the output.
        long_writes = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")
        if isinstance(long_writes, int):
            self._usage["cache_write_1h"] = long_writes
        thinking = (usage.get("output_tokens_details") or {}).get("thinking_tokens")
        if isinstance(thinking, int):
            self._usage["reasoning"] = thinking
        self._partial.set_usage(
            make_usage(
                self._model,
                input=self._usage.get("input_tokens", 0),
                output=self._usage.get("output_tokens", 0),
                cache_read=self._usage.get("cache_read_input_tokens", 0),
                cache_write=self._usage.get("cache_creation_input_tokens", 0),
                reasoning=self._usage.get("reasoning"),
                cache_write_1h=self._usage.get("cache_write_1h", 0),
            )
        )

    def _block_start(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        block = data.get("content_block") or {}
        kind = block.get("type")
        # The API sends blocks one after another; should a compatible server not, the open
        # block ends here so that the protocol's one-block-at-a-time order still holds.
        yield from self._partial.end_all()
        start: TextStart | ThinkingStart | ToolCallStart
        if kind == "text":
            start = self._partial.begin_text()
        elif kind == "thinking":
            start = self._partial.begin_thinking()
        elif kind == "redacted_thinking":
            start = self._partial.begin_thinking(
                REDACTED_THINKING_TEXT, signature=block.get("data"), redacted=True
            )
        elif kind == "tool_use":
            start = self._partial.begin_tool_call(
                str(block.get("id", "")), str(block.get("name", "")), block.get("input") or {}
            )
        else:
            return  # server tool blocks and the like have no pi_core counterpart
        index = self._blocks[data.get("index", len(self._blocks))] = start.content_index
        yield start
        initial = block.get("text") or block.get("thinking")
        if isinstance(initial, str) and initial:
            yield from self._grow(index, kind, initial)

    def _block_delta(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        index = self._blocks.get(data.get("index", -1))
        delta = data.get("delta") or {}
        if index is None or not self._partial.is_open(index):
            return
        kind = delta.get("type")
        if kind == "signature_delta":
            self._partial.add_thinking_signature(index, str(delta.get("signature", "")))
        elif kind == "text_delta":
            yield from self._grow(index, "text", str(delta.get("text", "")))
        elif kind == "thinking_delta":
            yield from self._grow(index, "thinking", str(delta.get("thinking", "")))
        elif kind == "input_json_delta" and delta.get("partial_json"):
            event = self._partial.add_tool_json(index, str(delta["partial_json"]))
            if event is not None:
                yield event

    def _grow(self, index: int, kind: str, text: str) -> Iterator[AssistantMessageEvent]:
        if kind == "text":
            yield self._partial.add_text(index, text)
        else:
            yield self._partial.add_thinking(index, text)

    def _block_stop(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        index = self._blocks.get(data.get("index", -1))
        if index is not None:
            end = self._partial.end_block(index)
            if end is not None:
                yield end


def _stop_error_text(reason: str, details: object) -> str:
    """Why a reply that stopped for ``reason`` failed, in the original's words."""
    if reason == "refusal":
        explanation = details.get("explanation") if isinstance(details, dict) else None
        return explanation if isinstance(explanation, str) and explanation else _REFUSED
    if reason == "sensitive":
        return "Provider stopped with: sensitive"
    return f"Unhandled stop reason: {reason}"


def _stream_error_text(data: dict[str, Any]) -> str:
    error = data.get("error")
    message = error_body_message(data) or "Unknown error"
    kind = error.get("type") if isinstance(error, dict) else None
    return f"{kind}: {message}" if kind else message
