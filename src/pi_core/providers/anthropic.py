"""The Anthropic Messages API (api ``"anthropic-messages"``), streamed over SSE.

Usage::

    from pi_core.providers import anthropic

    anthropic.register()                    # stream_simple now serves api "anthropic-messages"
    model = Model("claude-sonnet-4-5", api="anthropic-messages", provider="anthropic",
                  reasoning=True, input=("text", "image"), max_tokens=64000)

    # or directly, optionally with your own httpx client:
    async for event in anthropic.stream_anthropic(model, context, options, client=my_client): ...
    anthropic.register(client=my_client)    # same as functools.partial(stream_anthropic, client=...)

Importing this module registers nothing; :func:`register` does. The request goes to
``{base_url}/v1/messages`` (``base_url`` defaults to ``https://api.anthropic.com``; one that
already ends in ``/v1`` is used as it is) with ``x-api-key`` from ``options.api_key`` or
``ANTHROPIC_API_KEY`` and ``anthropic-version: 2023-06-01``.

Mapping:

* ``text`` / ``thinking`` / ``tool_use`` blocks become text, thinking and tool call blocks;
  ``signature_delta`` fills ``thinking_signature``; a ``redacted_thinking`` block becomes
  ``ThinkingContent("[Reasoning redacted]", thinking_signature=<data>, redacted=True)`` and is
  sent back as it came. ``input_json_delta`` fragments are ``toolcall_delta`` events with
  partial arguments on the partial message.
* Usage: ``message_start`` gives the input side (with cache reads and writes), ``message_delta``
  the cumulative output; totals are the sum of the four counts.
* ``stop_reason``: ``end_turn`` / ``stop_sequence`` / ``pause_turn`` → stop, ``max_tokens`` /
  ``model_context_window_exceeded`` → length, ``tool_use`` → toolUse, ``refusal`` → a
  ``StreamError``. An ``error`` event mid-stream (``overloaded_error`` …) is a ``StreamError``.
* Thinking: when ``model.reasoning`` and ``options.reasoning`` is a level, extended thinking is
  enabled with that level's budget (:data:`DEFAULT_THINKING_BUDGETS`, overridden per level by
  ``options.thinking_budgets``); ``max_tokens`` grows by the budget (capped at
  ``model.max_tokens``), and ``temperature`` is not sent since the API refuses it with thinking.
* ``max_tokens`` (required by the API): ``options.max_tokens``, else ``model.max_tokens`` capped
  at 32000, else 4096.
* Prompt caching follows ``options.cache_retention`` (default ``"short"``): the system prompt and
  the last user block carry ``cache_control``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from .._events import AssistantMessageEvent, TextStart, ThinkingStart, ToolCallStart
from .._messages import Context, Model, StopReason
from .._options import StreamOptions
from .._registry import register_provider, unregister_provider
from ._anthropic_convert import cache_control, convert_messages, convert_system, convert_tools
from ._common import (
    RequestSpec,
    StreamFailure,
    error_text,
    make_usage,
    merge_headers,
    parse_event_json,
    require_api_key,
    stream_sse,
)
from ._partial import PartialMessage

__all__ = [
    "ANTHROPIC_VERSION",
    "API",
    "DEFAULT_BASE_URL",
    "DEFAULT_THINKING_BUDGETS",
    "ENV_API_KEY",
    "REDACTED_THINKING_TEXT",
    "register",
    "stream_anthropic",
    "thinking_settings",
    "unregister",
]

API = "anthropic-messages"
DEFAULT_BASE_URL = "https://api.anthropic.com"
ENV_API_KEY = "ANTHROPIC_API_KEY"
ANTHROPIC_VERSION = "2023-06-01"
REDACTED_THINKING_TEXT = "[Reasoning redacted]"
"""The ``thinking`` text of a redacted block (its encrypted data is the signature)."""

DEFAULT_THINKING_BUDGETS: Mapping[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}
"""Thinking tokens per level; ``options.thinking_budgets`` overrides single levels."""

_DEFAULT_MAX_TOKENS = 4096
_MAX_TOKENS_CAP = 32000
_MIN_OUTPUT_TOKENS = 1024

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "sensitive": "error",
}


def stream_anthropic(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    client: httpx.AsyncClient | None = None,
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one Messages API reply as stream protocol events.

    Args:
        model: the model; ``base_url``, ``headers``, ``reasoning``, ``input``, ``max_tokens``
            and ``cost`` are used.
        context: system prompt, messages and tools.
        options: key, reasoning level and budgets, temperature, max tokens, headers, cache
            retention, metadata (``user_id``), timeout and abort signal.
        client: an ``httpx.AsyncClient`` to send with (its own timeouts apply); by default a
            client is created for this one request and closed after it.

    Returns:
        An async iterator of events ending with exactly one ``StreamDone`` or ``StreamError``.
        Failures and aborts are ``StreamError`` events; nothing is raised except cancellation
        from outside.
    """
    opts = options if options is not None else StreamOptions()
    partial = PartialMessage(model)
    return stream_sse(
        partial,
        functools.partial(_build_request, model, context, opts),
        _EventMapper(partial, model),
        opts,
        client,
    )


def register(*, client: httpx.AsyncClient | None = None) -> None:
    """Serve api ``"anthropic-messages"`` in :func:`pi_core.stream_simple` (replacing any).

    With ``client``, every request of the registry goes through that client.
    """
    stream_fn = (
        stream_anthropic if client is None else functools.partial(stream_anthropic, client=client)
    )
    register_provider(API, stream_fn)


def unregister() -> None:
    """Remove the provider of api ``"anthropic-messages"`` from the registry."""
    unregister_provider(API)


# --- the request --------------------------------------------------------------------------------


def _build_request(model: Model, context: Context, options: StreamOptions) -> RequestSpec:
    """The Messages request for ``context``; :class:`StreamFailure` without an API key."""
    api_key = require_api_key(model, options, ENV_API_KEY)
    headers = merge_headers(
        {
            "x-api-key": api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
        },
        model.headers,
        options.headers,
    )
    return RequestSpec(_messages_url(model), headers, _body(model, context, options))


def _messages_url(model: Model) -> str:
    base = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def thinking_settings(model: Model, options: StreamOptions) -> tuple[int, int | None]:
    """``(max_tokens, thinking budget or None)`` for this call.

    The budget is added on top of the answer's tokens, capped at ``model.max_tokens``; when the
    cap leaves no room, the budget shrinks to keep 1024 tokens for the answer (as upstream).
    """
    base = options.max_tokens or (
        min(model.max_tokens, _MAX_TOKENS_CAP) if model.max_tokens else _DEFAULT_MAX_TOKENS
    )
    level = options.reasoning
    if not model.reasoning or level is None or level == "off":
        return base, None
    budgets = {**DEFAULT_THINKING_BUDGETS, **(options.thinking_budgets or {})}
    budget = budgets.get(level, DEFAULT_THINKING_BUDGETS["medium"])
    max_tokens = base + budget
    if model.max_tokens:
        max_tokens = min(max_tokens, model.max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - _MIN_OUTPUT_TOKENS)
    return max_tokens, budget


def _body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    cache = cache_control(model, options.cache_retention)
    max_tokens, budget = thinking_settings(model, options)
    body: dict[str, Any] = {
        "model": model.id,
        "max_tokens": max_tokens,
        "stream": True,
        "messages": convert_messages(model, context, cache),
    }
    system = convert_system(context.system_prompt, cache)
    if system is not None:
        body["system"] = system
    if context.tools:
        body["tools"] = convert_tools(context.tools)
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif options.temperature is not None:
        body["temperature"] = options.temperature
    user_id = (options.metadata or {}).get("user_id")
    if isinstance(user_id, str):
        body["metadata"] = {"user_id": user_id}
    return body


# --- the response -------------------------------------------------------------------------------


class _EventMapper:
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
        if not (self._done or self._stopped):
            raise StreamFailure("The stream ended before the response was complete")
        yield from self._partial.end_all()

    def _message_start(self, message: dict[str, Any]) -> None:
        partial = self._partial.message
        if message.get("id"):
            partial.response_id = str(message["id"])
        served = message.get("model")
        if served and served != self._model.id:
            partial.response_model = str(served)
        self._update_usage(message.get("usage"))

    def _message_delta(self, data: dict[str, Any]) -> None:
        reason = (data.get("delta") or {}).get("stop_reason")
        if reason:
            self._stopped = True
            message = self._partial.message
            message.stop_reason = _STOP_REASONS.get(reason, "stop")
            if message.stop_reason == "error":
                message.error_message = f"The provider stopped the response (stop_reason: {reason})"
        self._update_usage(data.get("usage"))

    def _update_usage(self, usage: object) -> None:
        """Counts are cumulative; a field left out (or null) keeps its earlier value."""
        if not isinstance(usage, dict):
            return
        for key, value in usage.items():
            if isinstance(value, int):
                self._usage[key] = value
        self._partial.set_usage(
            make_usage(
                self._model,
                input=self._usage.get("input_tokens", 0),
                output=self._usage.get("output_tokens", 0),
                cache_read=self._usage.get("cache_read_input_tokens", 0),
                cache_write=self._usage.get("cache_creation_input_tokens", 0),
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


def _stream_error_text(data: dict[str, Any]) -> str:
    error = data.get("error")
    message = error_text(data) or "Unknown error"
    kind = error.get("type") if isinstance(error, dict) else None
    return f"{kind}: {message}" if kind else message
