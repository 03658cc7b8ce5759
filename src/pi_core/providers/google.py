"""The Google Gemini API (api ``"google-generative-ai"``), streamed over SSE.

Usage::

    from pi_core.models import get_model
    from pi_core.providers import google

    google.register()                      # stream_simple now serves api "google-generative-ai"
    model = get_model("google", "gemini-2.5-flash")

    # or directly, optionally with your own httpx client:
    async for event in google.stream_google(model, context, options, client=my_client): ...

Importing this module registers nothing; :func:`register` does. The request goes to
``{base_url}/models/{model id}:streamGenerateContent?alt=sse`` (``base_url`` defaults to
``https://generativelanguage.googleapis.com/v1beta``) with ``x-goog-api-key`` from
``options.api_key``, else ``GEMINI_API_KEY``.

Mapping:

* Parts become blocks: ``text`` parts with ``thought: true`` → thinking, other ``text`` parts →
  text (consecutive parts of one kind grow one block), ``functionCall`` parts → tool calls with
  their whole arguments (Gemini does not stream them; several may come in one chunk). A call
  without an id, or with one already used in the reply, gets a new unique id. Thought signatures
  are kept on the block of their part and sent back to the same model.
* ``finishReason``: ``STOP`` → stop (toolUse when the reply calls tools), ``MAX_TOKENS`` →
  length; any other (``SAFETY``, ``RECITATION``, ``MALFORMED_FUNCTION_CALL``,
  ``MISSING_THOUGHT_SIGNATURE`` …) is an error that names the reason, with the usage and content
  kept. A blocked prompt (``promptFeedback.blockReason``) and an error sent as event data after
  the 200 status are errors too, and so is a stream that ends without a ``finishReason``.
* Usage: ``promptTokenCount`` less ``cachedContentTokenCount`` is input, the cached tokens are
  cache reads, ``candidatesTokenCount`` plus ``thoughtsTokenCount`` is output.
* Thinking, for a reasoning model: with ``options.reasoning`` the thoughts are included, and
  the level the model takes nearest to it (in its ``thinking_level_map``'s words) becomes a
  ``thinkingLevel`` for the models :func:`uses_thinking_level` names (Gemini 3 and later), a
  ``thinkingBudget`` for the others (``options.thinking_budgets`` per level, else
  :func:`thinking_budget`'s defaults); without it thinking is turned down as far as the model
  allows (a budget of 0, or the lowest level of a model that always thinks, or the model's own
  setting for 2.5 Pro, which refuses a budget of 0).
* Tool parameters are cut to the JSON Schema subset Gemini accepts (see ``_gemini_schema``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import ServerSentEvent

from .._events import AssistantMessageEvent
from .._messages import Context, Model, StopReason, TextContent, ThinkingContent, ToolCall
from .._options import StreamOptions
from .._registry import unregister_provider
from .._thinking import clamp_thinking_level, mapped_level
from ._common import (
    RequestSpec,
    StreamFailure,
    make_usage,
    merge_headers,
    parse_event_json,
    register_stream,
    start_stream,
    transcript_context,
    user_agent,
)
from ._google_convert import convert_contents, convert_system, convert_tools
from ._output_cap import output_cap
from ._partial import PartialMessage
from ._tool_choice import gemini_tool_config

__all__ = [
    "API",
    "DEFAULT_BASE_URL",
    "ENV_API_KEY",
    "register",
    "stream_google",
    "thinking_budget",
    "unregister",
    "uses_thinking_level",
]

API = "google-generative-ai"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
ENV_API_KEY = "GEMINI_API_KEY"

_BUDGETS = {
    "2.5-pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "2.5-flash-lite": {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "2.5-flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}
_STOP_REASONS: dict[str, StopReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "CONTINUATION": "length",  # the token limit of the request, not resumed
}


def stream_google(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    client: httpx.AsyncClient | None = None,
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one Gemini reply as stream protocol events.

    Args:
        model: the model; ``base_url``, ``headers``, ``reasoning``, ``input`` and ``cost`` are used.
        context: system prompt, messages and tools.
        options: key, reasoning level and budgets, temperature, max tokens, headers, timeout and
            abort signal.
        client: an ``httpx.AsyncClient`` to send with (its own timeouts apply); by default a
            client is created for this one request and closed after it.

    Returns:
        An async iterator of events ending with exactly one ``StreamDone`` or ``StreamError``.
        Failures of the request and aborts are ``StreamError`` events; nothing else is raised
        while it streams, except cancellation from outside.

    Raises:
        ProviderError: no API key in ``options`` or ``GEMINI_API_KEY``, before any request (as the
            original's ``streamSimple`` throws); the loop makes it a failed reply.
    """
    return start_stream(
        model, context, options, client, _build_request, _ChunkMapper, api_key_env=ENV_API_KEY
    )


def register(*, client: httpx.AsyncClient | None = None) -> None:
    """Serve api ``"google-generative-ai"`` in :func:`pi_core.stream_simple` (replacing any).

    :func:`~pi_core.stream_simple` uses this provider for its api without it; register it to
    replace another provider registered for the api, or, with ``client``, to send every request
    of the registry through that client.
    """
    register_stream(API, stream_google, client)


def unregister() -> None:
    """Remove the provider of api ``"google-generative-ai"`` from the registry."""
    unregister_provider(API)


def thinking_budget(model: Model, level: str, budgets: Mapping[str, int] | None = None) -> int:
    """The ``thinkingBudget`` of a Gemini 2.5 model at ``level`` (``xhigh`` and ``max`` count as
    ``high``): ``budgets[level]`` when given, else the model family's default, else -1 (the model
    decides)."""
    level = "high" if level in ("xhigh", "max") else level
    if budgets and level in budgets:
        return int(budgets[level])
    for family, defaults in _BUDGETS.items():  # the most specific family comes first
        if family in model.id:
            return defaults[level]
    return -1


# --- the request --------------------------------------------------------------------------------


def _build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> RequestSpec:
    """The streamGenerateContent request, sent with ``api_key``."""
    context = transcript_context(context)  # later system messages folded into the prompt
    headers = merge_headers(
        {
            "User-Agent": user_agent(),
            "x-goog-api-key": api_key,
            "Content-Type": "application/json",
        },
        model.headers,
        options.headers,
    )
    base_url = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    url = f"{base_url}/models/{quote(model.id, safe='')}:streamGenerateContent?alt=sse"
    return RequestSpec(url, headers, _body(model, context, options))


def _body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": convert_contents(model, context)}
    system = convert_system(context.system_prompt)
    if system is not None:
        body["systemInstruction"] = system
    if context.tools:
        body["tools"] = convert_tools(context.tools)
        if options.tool_choice is not None:
            body["toolConfig"] = gemini_tool_config(options.tool_choice)
    config: dict[str, Any] = {}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    max_tokens = output_cap(model, context, options.max_tokens)
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    thinking = _thinking_config(model, options)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if config:
        body["generationConfig"] = config
    return body


def _thinking_config(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    if not model.reasoning:
        return None
    level = options.reasoning
    asked = None if level is None or level == "off" else clamp_thinking_level(model, level)
    if asked is None or asked == "off":
        return _thinking_off(model)
    google_level = _google_level(model, asked)
    if uses_thinking_level(model):
        return {"includeThoughts": True, "thinkingLevel": google_level.upper()}
    budget = thinking_budget(model, google_level, options.thinking_budgets)
    return {"includeThoughts": True, "thinkingBudget": budget}


def _thinking_off(model: Model) -> dict[str, Any] | None:
    """Thinking turned down as far as the model allows: its lowest level where it always
    thinks, else a budget of 0 (2.5 Pro, which refuses 0, keeps its own setting)."""
    if not uses_thinking_level(model):
        return None if "2.5-pro" in model.id.lower() else {"thinkingBudget": 0}
    lowest = clamp_thinking_level(model, "off")
    if lowest == "off":
        return {"thinkingBudget": 0}
    return {"thinkingLevel": _google_level(model, lowest).upper()}


def _google_level(model: Model, level: str) -> str:
    """``minimal`` … ``high``: the level, or the model's map's word for it."""
    word = (mapped_level(model, level) or level).lower()
    if word not in _GOOGLE_LEVELS:
        raise ValueError(
            f"{model.provider}/{model.id} maps thinking level {level!r} to {word!r}, "
            f"which Gemini does not take (it takes {', '.join(_GOOGLE_LEVELS)})"
        )
    return word


def uses_thinking_level(model: Model) -> bool:
    """True for the models that take a ``thinkingLevel`` rather than a ``thinkingBudget``:
    Gemini 3 Pro and Flash and later, the ``-latest`` Flash aliases and Gemma 4."""
    name = model.id.lower()
    return _THINKING_LEVEL_MODELS.search(name) is not None or name in _LATEST_FLASH


_GOOGLE_LEVELS = ("minimal", "low", "medium", "high")
_THINKING_LEVEL_MODELS = re.compile(
    r"gemini-3(?:\.\d+)?-(?:pro|flash)|gemini-(?:[4-9]|[1-9]\d)|gemma-?4"
)
_LATEST_FLASH = frozenset({"gemini-flash-latest", "gemini-flash-lite-latest"})


# --- the response -------------------------------------------------------------------------------


class _ChunkMapper:
    """``GenerateContentResponse`` chunks → stream events; one block is open at a time."""

    def __init__(self, partial: PartialMessage, model: Model) -> None:
        self._partial = partial
        self._model = model
        self._current: int | None = None
        self._finish_reason: str | None = None

    @property
    def done(self) -> bool:
        """Always false: Gemini marks the end only by closing the stream."""
        return False

    def feed(self, sse: ServerSentEvent) -> Iterator[AssistantMessageEvent]:
        """The events of one chunk."""
        if not sse.data.strip():
            return
        chunk = parse_event_json(sse)
        if isinstance(chunk.get("error"), dict):
            raise StreamFailure(_error_text(chunk["error"]))
        self._note_metadata(chunk)
        candidates = chunk.get("candidates") or [{}]
        candidate = candidates[0]
        for part in (candidate.get("content") or {}).get("parts") or ():
            yield from self._part(part)
        reason = candidate.get("finishReason")
        if reason:
            self._finish_reason = str(reason)
            self._partial.message.raw_stop_reason = str(reason)
            self._set_stop_reason(str(reason), candidate.get("finishMessage"))
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            raise StreamFailure(f"The provider blocked the prompt (blockReason: {blocked})")

    def finish(self) -> Iterator[AssistantMessageEvent]:
        """Close the open block; a stream without a ``finishReason`` is incomplete."""
        yield from self._partial.end_all()
        if self._finish_reason is None:
            raise StreamFailure("Google stream ended without a finish reason")

    def _note_metadata(self, chunk: dict[str, Any]) -> None:
        message = self._partial.message
        if chunk.get("responseId") and message.response_id is None:
            message.response_id = str(chunk["responseId"])
        served = chunk.get("modelVersion")
        if served and served != self._model.id:
            message.response_model = str(served)
        usage = chunk.get("usageMetadata")
        if isinstance(usage, dict):
            cached = usage.get("cachedContentTokenCount") or 0
            self._partial.set_usage(
                make_usage(
                    self._model,
                    input=max(0, (usage.get("promptTokenCount") or 0) - cached),
                    output=(usage.get("candidatesTokenCount") or 0)
                    + (usage.get("thoughtsTokenCount") or 0),
                    cache_read=cached,
                    cache_write=0,
                    reasoning=usage.get("thoughtsTokenCount") or 0,
                )
            )

    def _set_stop_reason(self, reason: str, detail: object) -> None:
        message = self._partial.message
        stop = _STOP_REASONS.get(reason, "error")
        if stop == "stop" and any(isinstance(block, ToolCall) for block in message.content):
            stop = "toolUse"
        message.stop_reason = stop
        if stop == "error":
            text = f"Provider stopped with: {reason}"
            message.error_message = f"{text}: {detail}" if detail else text

    # --- parts --------------------------------------------------------------------------------

    def _part(self, part: dict[str, Any]) -> Iterator[AssistantMessageEvent]:
        signature = part.get("thoughtSignature")
        if isinstance(part.get("functionCall"), dict):
            yield from self._function_call(part["functionCall"], signature)
        elif isinstance(part.get("text"), str):
            kind = ThinkingContent if part.get("thought") is True else TextContent
            yield from self._text(kind, part["text"], signature)

    def _text(self, kind: type, text: str, signature: object) -> Iterator[AssistantMessageEvent]:
        if not text and not signature:
            return
        index = self._current
        if index is None or not isinstance(self._partial.message.content[index], kind):
            yield from self._close()
            start = (
                self._partial.begin_thinking()
                if kind is ThinkingContent
                else self._partial.begin_text()
            )
            index = self._current = start.content_index
            yield start
        block = self._partial.message.content[index]
        if isinstance(block, ThinkingContent):
            if text:
                yield self._partial.add_thinking(index, text)
            if isinstance(signature, str) and signature:
                block.thinking_signature = signature
        elif isinstance(block, TextContent):
            if text:
                yield self._partial.add_text(index, text)
            if isinstance(signature, str) and signature:
                block.text_signature = signature

    def _function_call(
        self, call: dict[str, Any], signature: object
    ) -> Iterator[AssistantMessageEvent]:
        yield from self._close()
        name = str(call.get("name") or "")
        wanted = call.get("id")
        taken = {b.id for b in self._partial.message.content if isinstance(b, ToolCall)}
        call_id = wanted if isinstance(wanted, str) and wanted and wanted not in taken else None
        start = self._partial.begin_tool_call(call_id or f"call_{uuid.uuid4().hex[:24]}", name)
        yield start
        index = start.content_index
        if isinstance(signature, str) and signature:
            self._partial.tool_call(index).thought_signature = signature
        args = call.get("args")
        # Compact, as JSON.stringify writes it, so consumers see the original's text.
        text = json.dumps(
            args if isinstance(args, dict) else {}, ensure_ascii=False, separators=(",", ":")
        )
        delta = self._partial.add_tool_json(index, text)
        if delta is not None:
            yield delta
        end = self._partial.end_block(index)
        if end is not None:
            yield end

    def _close(self) -> Iterator[AssistantMessageEvent]:
        if self._current is not None:
            end = self._partial.end_block(self._current)
            if end is not None:
                yield end
            self._current = None


def _error_text(error: dict[str, Any]) -> str:
    message = error.get("message") or "Unknown error"
    status = error.get("status") or error.get("code")
    return f"{status}: {message}" if status else str(message)
