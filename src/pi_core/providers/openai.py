"""OpenAI-compatible Chat Completions (api ``"openai-completions"``), streamed over SSE.

Works with OpenAI and with the servers that speak its Chat Completions dialect: Ollama, vLLM,
llama.cpp's server, OpenRouter, DeepSeek and others. ``model.base_url`` selects the server
(default ``https://api.openai.com/v1``); the request goes to ``{base_url}/chat/completions``.

Usage::

    from pi_core.providers import openai

    openai.register()                       # stream_simple now serves api "openai-completions"
    model = Model("gpt-4o-mini", api="openai-completions", provider="openai")

    # or call it directly, optionally with your own httpx client:
    async for event in openai.stream_openai(model, context, options, client=my_client): ...

    # bind a client for the registry (or for AgentLoopConfig.stream_fn):
    openai.register(client=my_client)       # same as functools.partial(stream_openai, client=...)

Importing this module registers nothing; :func:`register` does. The API key comes from
``options.api_key``, else ``OPENAI_API_KEY``. Servers that need no key (a local Ollama or
llama.cpp) still need some value, as their own docs suggest (e.g. ``api_key="ollama"``).

Mapping:

* Text deltas (``delta.content``) become text blocks; reasoning deltas (``delta.reasoning_content``
  as vLLM, DeepSeek and llama.cpp send it, ``delta.reasoning`` or ``delta.reasoning_text``; the
  first of them with text, as some servers send the same text under two names) become thinking
  blocks whose ``thinking_signature`` records the field name, so the reasoning can be sent back
  the same way.
* Tool calls stream their arguments as JSON fragments: each fragment is a ``toolcall_delta`` and
  the partial message's ``arguments`` hold what is parseable so far.
* ``finish_reason``: ``stop`` → stop, ``length`` → length, ``tool_calls`` / ``function_call`` →
  toolUse; ``content_filter``, ``network_error``, ``error`` and unknown reasons that name a
  failure (``…error``, ``…timeout`` …) → a ``StreamError`` naming the reason; other unknown
  reasons (``eos`` of some local servers) → stop.
* Usage comes from the last chunk (``stream_options.include_usage``), or from
  ``choices[0].usage`` where a server puts it there (Moonshot). Cached prompt tokens count as
  cache reads (``prompt_tokens_details.cached_tokens``, DeepSeek's ``prompt_cache_hit_tokens``),
  OpenRouter's ``cache_write_tokens`` as cache writes.
* The request follows the server's dialect, a :class:`~pi_core.ModelCompat` detected from
  ``model.base_url`` and overridden field by field by ``model.compat``: api.openai.com gets
  ``max_completion_tokens``, ``store: false``, the ``developer`` role for reasoning models and
  ``strict`` tools; DeepSeek its ``thinking`` switch; OpenRouter its ``reasoning`` object and
  cache markers for Anthropic models; any other server (vLLM, Ollama, llama.cpp …) the plain
  dialect every compatible server understands (``system`` role, ``max_tokens``).
  ``options.reasoning`` becomes ``reasoning_effort`` when ``model.reasoning`` is true (``xhigh``
  is sent as ``high``, the highest level most servers accept).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from .._events import AssistantMessageEvent
from .._messages import Context, Model, StopReason, ToolCall, Usage
from .._options import StreamOptions
from .._registry import unregister_provider
from ._common import (
    RequestSpec,
    StreamFailure,
    error_body_message,
    make_usage,
    merge_headers,
    parse_event_json,
    register_stream,
    start_stream,
    transcript_context,
    user_agent,
)
from ._openai_compat import resolve_compat
from ._openai_request import build_body, session_headers
from ._openrouter_cost import billed_cost
from ._partial import PartialMessage

__all__ = ["API", "DEFAULT_BASE_URL", "ENV_API_KEY", "register", "stream_openai", "unregister"]

API = "openai-completions"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
ENV_API_KEY = "OPENAI_API_KEY"

_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "error",
    "network_error": "error",
    "error": "error",
}
_FAILED_REASON_WORDS = ("error", "fail", "abort", "cancel", "timeout")
"""Unknown finish reasons containing one of these mean the reply failed."""


def stream_openai(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    client: httpx.AsyncClient | None = None,
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one Chat Completions reply as stream protocol events.

    Args:
        model: the model; ``base_url``, ``headers``, ``reasoning``, ``input`` and ``cost`` are used.
        context: system prompt, messages and tools.
        options: key, reasoning level, temperature, max tokens, headers, timeout and abort signal.
        client: an ``httpx.AsyncClient`` to send with (its own timeouts apply); by default a
            client is created for this one request and closed after it.

    Returns:
        An async iterator of events ending with exactly one ``StreamDone`` or ``StreamError``.
        Failures of the request (HTTP errors, network errors, timeouts, malformed data) and
        aborts are ``StreamError`` events; nothing else is raised while it streams, except
        cancellation from outside.

    Raises:
        ProviderError: no API key in ``options`` or ``OPENAI_API_KEY``, before any request (as
            the original's ``streamSimple`` throws); the loop makes it a failed reply.
    """
    return start_stream(
        model, context, options, client, _build_request, _ChunkMapper, api_key_env=ENV_API_KEY
    )


def register(*, client: httpx.AsyncClient | None = None) -> None:
    """Serve api ``"openai-completions"`` in :func:`pi_core.stream_simple` (replacing any).

    :func:`~pi_core.stream_simple` uses this provider for its api without it; register it to
    replace another provider registered for the api, or, with ``client``, to send every request
    of the registry through that client.
    """
    register_stream(API, stream_openai, client)


def unregister() -> None:
    """Remove the provider of api ``"openai-completions"`` from the registry."""
    unregister_provider(API)


# --- the request --------------------------------------------------------------------------------


def _build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> RequestSpec:
    """The Chat Completions request for ``context``, sent with ``api_key``."""
    compat = resolve_compat(model)
    context = transcript_context(
        context, mid_conversation=compat.supports_mid_convo_system_messages is True
    )
    base_url = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    headers = merge_headers(
        {
            "User-Agent": user_agent(),
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
        },
        model.headers,
        session_headers(options, compat),
        options.headers,
    )
    body = build_body(model, context, options, compat)
    return RequestSpec(f"{base_url}/chat/completions", headers, body)


# --- the response -------------------------------------------------------------------------------


class _ChunkMapper:
    """Chat completion chunks → stream events; one block is open at a time, as upstream."""

    def __init__(self, partial: PartialMessage, model: Model) -> None:
        self._partial = partial
        self._model = model
        self._compat = resolve_compat(model)
        self._current: int | None = None
        self._current_kind = ""
        self._calls: dict[int, int] = {}
        """The server's tool call ``index`` → our content index."""
        self._done = False
        self._finished = False

    @property
    def done(self) -> bool:
        """True after ``data: [DONE]``."""
        return self._done

    def feed(self, sse: ServerSentEvent) -> Iterator[AssistantMessageEvent]:
        """The events of one chunk."""
        data = sse.data.strip()
        if data == "[DONE]":
            self._done = True
            return
        if not data:
            return  # a keep-alive
        chunk = parse_event_json(sse)
        if chunk.get("error") or sse.event == "error":
            # OpenRouter and vLLM report failures after the 200 status as an error chunk.
            raise StreamFailure(error_body_message(chunk) or f"Provider error: {data}")
        self._note_metadata(chunk)
        choices = chunk.get("choices")
        if not choices:
            return
        choice = choices[0]
        if not isinstance(chunk.get("usage"), dict) and isinstance(choice.get("usage"), dict):
            self._partial.set_usage(_usage(self._model, choice["usage"]))  # Moonshot's place
        delta = choice.get("delta") or {}
        # Some servers send the same reasoning under two names: the first one with text counts.
        field = next((name for name in _REASONING_FIELDS if delta.get(name)), None)
        if field is not None:
            yield from self._thinking(delta[field], field)
        yield from self._text(delta.get("content"))
        for call in delta.get("tool_calls") or ():
            yield from self._tool_call(call)
        reason = choice.get("finish_reason")
        if reason:
            self._finished = True
            self._set_stop_reason(reason)

    def finish(self) -> Iterator[AssistantMessageEvent]:
        """Close the open block; a stream without ``finish_reason`` or ``[DONE]`` is incomplete."""
        yield from self._partial.end_all()
        if self._finished:
            return
        if self._compat.supports_finish_reason is False:
            # A server known to leave finish_reason out: the reply's content tells.
            message = self._partial.message
            calls = any(isinstance(block, ToolCall) for block in message.content)
            message.stop_reason = "toolUse" if calls else "stop"
            return
        raise StreamFailure("Stream ended without finish_reason")

    def _note_metadata(self, chunk: dict[str, Any]) -> None:
        message = self._partial.message
        if chunk.get("id") and message.response_id is None:
            message.response_id = str(chunk["id"])
        served = chunk.get("model")
        if served and served != self._model.id:
            message.response_model = str(served)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._partial.set_usage(_usage(self._model, usage))

    def _set_stop_reason(self, reason: str) -> None:
        message = self._partial.message
        message.raw_stop_reason = reason
        message.stop_reason = _stop_reason(reason)
        if message.stop_reason == "error":
            message.error_message = f"Provider finish_reason: {reason}"

    def _switch(self, kind: str) -> Iterator[AssistantMessageEvent]:
        """Close the open block unless it is of ``kind``."""
        if self._current is not None and self._current_kind != kind:
            end = self._partial.end_block(self._current)
            if end is not None:
                yield end
            self._current = None

    def _thinking(self, text: object, field: str) -> Iterator[AssistantMessageEvent]:
        if not isinstance(text, str) or not text:
            return
        yield from self._switch("thinking")
        if self._current is None:
            start = self._partial.begin_thinking(signature=field)
            self._current, self._current_kind = start.content_index, "thinking"
            yield start
        yield self._partial.add_thinking(self._current, text)

    def _text(self, text: object) -> Iterator[AssistantMessageEvent]:
        if not isinstance(text, str) or not text:
            return
        yield from self._switch("text")
        if self._current is None:
            start = self._partial.begin_text()
            self._current, self._current_kind = start.content_index, "text"
            yield start
        yield self._partial.add_text(self._current, text)

    def _tool_call(self, call: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        function = call.get("function") or {}
        index = self._calls.get(call.get("index", 0))
        call_id = call.get("id")
        if index is None or (call_id and self._partial.tool_call(index).id != call_id):
            yield from self._switch("")
            start = self._partial.begin_tool_call(
                call_id or _new_call_id(), function.get("name") or ""
            )
            index = self._calls[call.get("index", 0)] = start.content_index
            self._current, self._current_kind = index, "tool"
            yield start
        block: ToolCall = self._partial.tool_call(index)
        if function.get("name"):
            block.name = function["name"]
        fragment = function.get("arguments")
        if fragment:
            delta = self._partial.add_tool_json(index, fragment)
            if delta is not None:
                yield delta


def _stop_reason(reason: str) -> StopReason:
    """The stop reason for a ``finish_reason``: known ones mapped, unknown ones naming a failure
    (``network_error``, ``upstream_error``, ``timeout`` …) an error, other unknown ones (``eos``
    and such from local servers) a normal stop."""
    known = _STOP_REASONS.get(reason)
    if known is not None:
        return known
    lowered = reason.lower()
    return "error" if any(word in lowered for word in _FAILED_REASON_WORDS) else "stop"


def _usage(model: Model, usage: dict[str, Any]) -> Usage:
    """Token counts in every dialect: cache reads are OpenAI's
    ``prompt_tokens_details.cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens``, else
    Kimi's ``cached_tokens``; cache writes OpenRouter's ``cache_write_tokens``, counted apart
    from the reads. ``prompt_tokens`` includes both; ``completion_tokens`` includes the
    reasoning tokens. OpenRouter's billed cost, when it reports a complete one, is the total."""
    details = usage.get("prompt_tokens_details") or {}
    cache_read = _first_count(
        details.get("cached_tokens"),
        usage.get("prompt_cache_hit_tokens"),
        usage.get("cached_tokens"),
    )
    cache_write = _count(details.get("cache_write_tokens")) or 0
    prompt = _count(usage.get("prompt_tokens")) or 0
    reasoning = _count((usage.get("completion_tokens_details") or {}).get("reasoning_tokens"))
    counted = make_usage(
        model,
        input=max(0, prompt - cache_read - cache_write),
        output=_count(usage.get("completion_tokens")) or 0,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning or _count(usage.get("reasoning_tokens")) or 0,
    )
    if model.provider == "openrouter" or "openrouter.ai" in model.base_url:
        billed = billed_cost(usage)
        if billed is not None:
            counted.cost.total, counted.cost.total_from_provider = billed, True
    return counted


def _first_count(*values: object) -> int:
    """The first of ``values`` that is a count (0 counts), else 0."""
    return next((value for value in map(_count, values) if value is not None), 0)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _new_call_id() -> str:
    # Some local servers send tool calls without an id; results are matched by id.
    return f"call_{uuid.uuid4().hex[:24]}"
