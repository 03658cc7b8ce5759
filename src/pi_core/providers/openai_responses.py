"""The OpenAI Responses API (api ``"openai-responses"``), streamed over SSE.

The API OpenAI's reasoning models are built for: their reasoning is kept between turns, which
Chat Completions cannot do. Usage::

    from pi_core.models import get_model
    from pi_core.providers import openai_responses

    openai_responses.register()            # stream_simple now serves api "openai-responses"
    model = get_model("openai", "gpt-5")

    # or directly, optionally with your own httpx client:
    async for event in openai_responses.stream_openai_responses(model, context, options): ...

Importing this module registers nothing; :func:`register` does. The request goes to
``{base_url}/responses`` (``base_url`` defaults to ``https://api.openai.com/v1``) with the key of
``options.api_key``, else ``OPENAI_API_KEY``.

Mapping:

* Output items become blocks: ``reasoning`` → thinking (its summary text), ``message`` → text
  (refusals included), ``function_call`` → a tool call with id ``<call_id>|<item id>``. The
  signatures keep what must go back (see :mod:`pi_core.providers._responses_convert`): requests
  set ``store: false`` and, when they ask for reasoning, ``reasoning.encrypted_content``, so
  reasoning round-trips without anything stored at OpenAI.
* ``response.completed`` → stop (toolUse when the reply calls tools); ``response.incomplete`` →
  length for ``max_output_tokens``, an error naming the reason otherwise; ``response.failed`` and
  ``error`` events → an error with the API's code and message. Usage is kept in every case. A
  stream that ends without one of the three ``response.*`` endings is an error.
* Usage: ``input_tokens`` less the cached ones is input, the cached ones are cache reads,
  ``output_tokens`` (reasoning included) is output.
* ``options.reasoning`` on a reasoning model becomes ``reasoning.effort`` with an ``auto``
  summary: the level the model takes nearest to it (``minimal`` on a model without it is
  ``low``, ``xhigh`` on a model whose ``thinking_level_map`` does not name it is ``high``), in
  the map's word for it. With no level (or ``"off"``) the effort is the map's word for ``off``,
  else ``none``; nothing is sent for a model whose map rules ``off`` out (it always reasons);
  ``max_output_tokens`` is ``options.max_tokens``, else the model's limit, fitted into the
  context window; ``options.session_id`` is the
  ``prompt_cache_key`` (and the ``session-id`` header, unless ``model.compat`` says the server
  does not want it) unless ``cache_retention`` is ``"none"``, and ``"long"`` retention asks for
  24 hours (unless ``model.compat.supports_long_cache_retention`` is false).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from .._events import AssistantMessageEvent, TextStart, ThinkingStart, ToolCallStart
from .._messages import Context, Model, TextContent, ThinkingContent, ThinkingLevel, ToolCall, Usage
from .._options import StreamOptions
from .._registry import unregister_provider
from .._thinking import clamp_thinking_level, mapped_level, thinking_can_be_off
from ._common import (
    RequestSpec,
    StreamFailure,
    make_usage,
    merge_headers,
    parse_event_json,
    prompt_cache_key,
    register_stream,
    start_stream,
    transcript_context,
    user_agent,
)
from ._output_cap import output_cap
from ._partial import PartialMessage
from ._responses_convert import convert_input, convert_tools, encode_text_signature
from ._tool_choice import add_sampling_params, responses_tool_choice

__all__ = [
    "API",
    "DEFAULT_BASE_URL",
    "ENV_API_KEY",
    "register",
    "stream_openai_responses",
    "unregister",
]

API = "openai-responses"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
ENV_API_KEY = "OPENAI_API_KEY"

_ENDINGS = ("response.completed", "response.incomplete", "response.failed")
_MIN_OUTPUT_TOKENS = 16
"""The API refuses a ``max_output_tokens`` below this."""


def stream_openai_responses(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    client: httpx.AsyncClient | None = None,
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one Responses API reply as stream protocol events.

    Args:
        model: the model; ``base_url``, ``headers``, ``reasoning``, ``input`` and ``cost`` are used.
        context: system prompt, messages and tools.
        options: key, reasoning level, temperature, max tokens, headers, session id and cache
            retention, timeout and abort signal.
        client: an ``httpx.AsyncClient`` to send with (its own timeouts apply); by default a
            client is created for this one request and closed after it.

    Returns:
        An async iterator of events ending with exactly one ``StreamDone`` or ``StreamError``.
        Failures of the request and aborts are ``StreamError`` events; nothing else is raised
        while it streams, except cancellation from outside.

    Raises:
        ProviderError: no API key in ``options`` or ``OPENAI_API_KEY``, before any request (as the
            original's ``streamSimple`` throws); the loop makes it a failed reply.
    """
    return start_stream(
        model, context, options, client, _build_request, _ResponsesMapper, api_key_env=ENV_API_KEY
    )


def register(*, client: httpx.AsyncClient | None = None) -> None:
    """Serve api ``"openai-responses"`` in :func:`pi_core.stream_simple` (replacing any).

    :func:`~pi_core.stream_simple` uses this provider for its api without it; register it to
    replace another provider registered for the api, or, with ``client``, to send every request
    of the registry through that client.
    """
    register_stream(API, stream_openai_responses, client)


def unregister() -> None:
    """Remove the provider of api ``"openai-responses"`` from the registry."""
    unregister_provider(API)


# --- the request --------------------------------------------------------------------------------


def _build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> RequestSpec:
    """The Responses request for ``context``, sent with ``api_key``."""
    mid_conversation = model.compat is not None and (
        model.compat.supports_mid_convo_system_messages is True
    )
    context = transcript_context(context, mid_conversation=mid_conversation)
    headers = merge_headers(
        {
            "User-Agent": user_agent(),
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
        },
        model.headers,
        _session_headers(model, options),
        options.headers,
    )
    base_url = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    return RequestSpec(f"{base_url}/responses", headers, _body(model, context, options))


def _session_headers(model: Model, options: StreamOptions) -> dict[str, str]:
    """The session id as headers that route the turns of a session to one prompt cache, in the
    server's own way (``ModelCompat.session_affinity_format``)."""
    session = options.session_id
    if not session or options.cache_retention == "none":
        return {}
    compat = model.compat
    affinity = compat.session_affinity_format if compat else None
    if affinity is None:
        openrouter = model.provider == "openrouter" or "openrouter.ai" in (model.base_url or "")
        affinity = "openrouter" if openrouter else "openai"
    if affinity == "openrouter":
        return {"x-session-id": session}
    headers = {"x-client-request-id": session}
    if affinity == "openai" and (compat is None or compat.send_session_id_header is not False):
        headers["session-id"] = session
    return headers


def _body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model.id,
        "input": convert_input(model, context),
        "stream": True,
        "store": False,
    }
    if options.cache_retention != "none" and options.session_id:
        body["prompt_cache_key"] = prompt_cache_key(options.session_id)
    if options.cache_retention == "long" and (
        model.compat is None or model.compat.supports_long_cache_retention is not False
    ):
        body["prompt_cache_retention"] = "24h"
    max_tokens = output_cap(model, context, options.max_tokens)
    if max_tokens is not None and (
        model.compat is None or model.compat.supports_max_output_tokens is not False
    ):
        body["max_output_tokens"] = max(max_tokens, _MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = convert_tools(context.tools)
    if model.reasoning:
        _add_reasoning(body, model, options.reasoning)
    if options.tool_choice is not None and context.tools:
        body["tool_choice"] = responses_tool_choice(options.tool_choice)
    add_sampling_params(body, options)
    return body


def _add_reasoning(body: dict[str, Any], model: Model, level: ThinkingLevel | None) -> None:
    if level is not None and level != "off":
        level = clamp_thinking_level(model, level)
    if level is not None and level != "off":
        body["reasoning"] = {"effort": mapped_level(model, level) or level, "summary": "auto"}
        # Without the encrypted content a reasoning item cannot be sent back (nothing is
        # stored); a request that asks for no reasoning asks for none of it either.
        body["include"] = ["reasoning.encrypted_content"]
    elif model.provider != "github-copilot" and thinking_can_be_off(model):
        # Unasked, a reasoning model reasons: "off" is said, in the model's own word for it.
        body["reasoning"] = {"effort": mapped_level(model, "off") or "none"}
    if model.provider == "xai":  # xAI's reasoning models always send their reasoning back
        body["include"] = ["reasoning.encrypted_content"]


# --- the response -------------------------------------------------------------------------------


class _ResponsesMapper:
    """Responses stream events → stream events; one output item is one block."""

    def __init__(self, partial: PartialMessage, model: Model) -> None:
        self._partial = partial
        self._model = model
        self._items: dict[int, int] = {}
        """The server's ``output_index`` → our content index (unknown item kinds are absent)."""
        self._summary_parts: dict[int, int] = {}
        self._done = False

    @property
    def done(self) -> bool:
        """True after ``response.completed``, ``response.incomplete`` or ``response.failed``."""
        return self._done

    def feed(self, sse: ServerSentEvent) -> Iterator[AssistantMessageEvent]:
        """The events of one server-sent event."""
        if not sse.data.strip():
            return
        data = parse_event_json(sse)
        kind = str(data.get("type") or sse.event or "")
        if kind == "response.output_item.added":
            yield from self._item_added(data)
        elif kind == "response.output_item.done":
            yield from self._item_done(data)
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            yield from self._text_delta(data)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            yield from self._thinking_delta(data)
        elif kind == "response.reasoning_summary_part.added":
            yield from self._summary_part(data)
        elif kind == "response.function_call_arguments.delta":
            yield from self._arguments(data, str(data.get("delta", "")))
        elif kind == "response.function_call_arguments.done":
            yield from self._arguments_done(data)
        elif kind == "response.created":
            self._note_response(data.get("response") or {})
        elif kind in _ENDINGS:
            self._end(kind, data.get("response") or {})
        elif kind == "error":
            raise StreamFailure(_error_text(data))
        # Other events (in_progress, content_part.*, *.done echoes, annotations) add nothing.

    def finish(self) -> Iterator[AssistantMessageEvent]:
        """Close open blocks; a stream without its ``response.*`` ending is incomplete."""
        yield from self._partial.end_all()
        if not self._done:
            raise StreamFailure("OpenAI Responses stream ended before a terminal response event")

    # --- items --------------------------------------------------------------------------------

    def _item_added(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        item = data.get("item") or {}
        kind = item.get("type")
        if kind not in ("reasoning", "message", "function_call"):
            return  # built-in tool calls and the like have no pi_core counterpart
        # Items stream one after another; should a server interleave them, the open block ends
        # here so that the protocol's one-block-at-a-time order still holds.
        yield from self._partial.end_all()
        start: ThinkingStart | TextStart | ToolCallStart
        if kind == "reasoning":
            start = self._partial.begin_thinking()
        elif kind == "message":
            start = self._partial.begin_text()
        else:
            call_id = f"{item.get('call_id', '')}|{item.get('id', '')}"
            start = self._partial.begin_tool_call(call_id, str(item.get("name", "")))
        self._items[self._output_index(data)] = start.content_index
        yield start
        if kind == "function_call" and item.get("arguments"):
            yield from self._arguments(data, str(item["arguments"]))

    def _item_done(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        item = data.get("item") or {}
        kind = item.get("type")
        if kind not in ("reasoning", "message", "function_call"):
            return
        index = self._items.get(self._output_index(data))
        if index is None:  # a server that skipped output_item.added
            yield from self._item_added(data)
            index = self._items[self._output_index(data)]
        if not self._partial.is_open(index):
            return
        block = self._partial.message.content[index]
        if isinstance(block, ThinkingContent):
            yield from self._catch_up(index, block.thinking, _reasoning_text(item))
            block.thinking_signature = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
        elif isinstance(block, TextContent):
            yield from self._catch_up(index, block.text, _message_text(item))
            block.text_signature = encode_text_signature(str(item.get("id", "")), item.get("phase"))
        elif isinstance(block, ToolCall):
            yield from self._arguments_done({**data, "arguments": item.get("arguments")})
        end = self._partial.end_block(index)
        if end is not None:
            yield end

    def _catch_up(self, index: int, streamed: str, final: str) -> Iterator[AssistantMessageEvent]:
        """The final text's tail that the deltas did not bring (all of it when none came)."""
        if len(final) > len(streamed) and final.startswith(streamed):
            rest = final[len(streamed) :]
            block = self._partial.message.content[index]
            if isinstance(block, ThinkingContent):
                yield self._partial.add_thinking(index, rest)
            else:
                yield self._partial.add_text(index, rest)

    # --- deltas -------------------------------------------------------------------------------

    def _open_block(self, data: dict[str, Any], kind: type) -> int | None:
        index = self._items.get(self._output_index(data))
        if index is None or not self._partial.is_open(index):
            return None
        return index if isinstance(self._partial.message.content[index], kind) else None

    def _text_delta(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        index = self._open_block(data, TextContent)
        delta = data.get("delta")
        if index is not None and isinstance(delta, str) and delta:
            yield self._partial.add_text(index, delta)

    def _thinking_delta(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        index = self._open_block(data, ThinkingContent)
        delta = data.get("delta")
        if index is not None and isinstance(delta, str) and delta:
            yield self._partial.add_thinking(index, delta)

    def _summary_part(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        """Summary parts are paragraphs: a blank line goes between them."""
        index = self._open_block(data, ThinkingContent)
        if index is None:
            return
        parts = self._summary_parts.get(index, 0)
        self._summary_parts[index] = parts + 1
        if parts:
            yield self._partial.add_thinking(index, "\n\n")

    def _arguments(self, data: dict[str, Any], fragment: str) -> Iterator[AssistantMessageEvent]:
        index = self._open_block(data, ToolCall)
        if index is not None and fragment:
            event = self._partial.add_tool_json(index, fragment)
            if event is not None:
                yield event

    def _arguments_done(self, data: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        """The complete arguments: whatever the deltas left out is added."""
        index = self._open_block(data, ToolCall)
        final = data.get("arguments")
        if index is None or not isinstance(final, str):
            return
        streamed = self._partial.tool_json(index)
        if len(final) > len(streamed) and final.startswith(streamed):
            yield from self._arguments(data, final[len(streamed) :])

    # --- the response -------------------------------------------------------------------------

    def _note_response(self, response: dict[str, Any]) -> None:
        message = self._partial.message
        if response.get("id"):
            message.response_id = str(response["id"])
        served = response.get("model")
        if served and served != self._model.id:
            message.response_model = str(served)

    def _end(self, kind: str, response: dict[str, Any]) -> None:
        self._done = True
        self._note_response(response)
        if response.get("status"):
            self._partial.message.raw_stop_reason = str(response["status"])
        usage = response.get("usage")
        if isinstance(usage, dict):
            self._partial.set_usage(_usage(self._model, usage))
        message = self._partial.message
        if kind == "response.failed":
            raise StreamFailure(_failure_text(response))
        if kind == "response.incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            if reason == "max_output_tokens":
                message.stop_reason = "length"
            else:
                message.stop_reason = "error"
                message.error_message = (
                    f"Response incomplete: {reason}"
                    if reason
                    else "Response incomplete without a provider reason"
                )
            return
        calls = any(isinstance(block, ToolCall) for block in message.content)
        message.stop_reason = "toolUse" if calls else "stop"

    @staticmethod
    def _output_index(data: dict[str, Any]) -> int:
        index = data.get("output_index", 0)
        return index if isinstance(index, int) else 0


def _reasoning_text(item: dict[str, Any]) -> str:
    summary = [part.get("text", "") for part in item.get("summary") or ()]
    content = [part.get("text", "") for part in item.get("content") or ()]
    return "\n\n".join(summary) or "\n\n".join(content)


def _message_text(item: dict[str, Any]) -> str:
    parts = item.get("content") or ()
    return "".join(str(part.get("text") or part.get("refusal") or "") for part in parts)


def _usage(model: Model, usage: dict[str, Any]) -> Usage:
    # input_tokens includes the cached and written ones; output_tokens the reasoning ones.
    details = usage.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    counted = make_usage(
        model,
        input=max(0, (usage.get("input_tokens") or 0) - cached - written),
        output=usage.get("output_tokens") or 0,
        cache_read=cached,
        cache_write=written,
        reasoning=(usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0,
    )
    counted.total_tokens = usage.get("total_tokens") or 0  # the API's own total
    return counted


def _error_text(data: dict[str, Any]) -> str:
    error = data.get("error") if isinstance(data.get("error"), dict) else data
    assert isinstance(error, dict)
    message = error.get("message") or "Unknown error"
    code = error.get("code") or error.get("type")
    return f"{code}: {message}" if code else str(message)


def _failure_text(response: dict[str, Any]) -> str:
    error = response.get("error")
    if isinstance(error, dict):
        return _error_text(error)
    reason = (response.get("incomplete_details") or {}).get("reason")
    return f"incomplete: {reason}" if reason else "Unknown error (no error details in response)"
