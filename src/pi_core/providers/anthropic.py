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
  ``model_context_window_exceeded`` → length, ``tool_use`` → toolUse; ``refusal`` is an error
  with the API's explanation (else "The model refused to complete the request"), ``sensitive``
  "Provider stopped with: sensitive", any other reason "Unhandled stop reason: <reason>". An
  ``error`` event mid-stream (``overloaded_error`` …) is a ``StreamError``, and so is a stream
  that ends before ``message_stop`` or without a stop reason.
* Thinking, for a ``model.reasoning`` model: with ``options.reasoning`` a level, models whose
  ``compat.force_adaptive_thinking`` is true (the catalogue's Opus and Sonnet 4.6 and later)
  think adaptively (``thinking: {type: "adaptive"}`` and ``output_config.effort``: the word
  the model's ``thinking_level_map`` has for the level, else low / medium / high), older
  models with that level's token budget (:data:`DEFAULT_THINKING_BUDGETS`, overridden per
  level by ``options.thinking_budgets``; ``max_tokens`` grows by the budget, capped at
  ``model.max_tokens``) and the ``interleaved-thinking-2025-05-14`` beta header, so they may
  think between tool calls. With
  no level (or ``"off"``) thinking is sent as ``{type: "disabled"}``, unless the model's map
  rules ``off`` out (it always thinks). ``temperature`` is sent only without thinking, which
  the API requires, and not to a model whose ``compat.supports_temperature`` is false.
* Tools stream their arguments as they are written (``eager_input_streaming``; a server whose
  ``model.compat.supports_eager_tool_input_streaming`` is false gets the fine-grained tool
  streaming beta header instead).
* ``max_tokens`` (required by the API): ``options.max_tokens``, else ``model.max_tokens``, fitted
  into the context window; 4096 when the model's limit is unknown.
* An error result's images (which the API refuses there) follow the turn's results, under a
  caption naming the call; the result's text says they follow.
* Prompt caching follows ``options.cache_retention`` (default ``"short"``): the system prompt,
  the last tool and the last user block carry ``cache_control``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from .._events import AssistantMessageEvent
from .._messages import Context, Model
from .._options import StreamOptions
from .._registry import unregister_provider
from .._thinking import mapped_level, thinking_can_be_off
from ._anthropic_convert import cache_control, convert_messages, convert_system, convert_tools
from ._anthropic_stream import REDACTED_THINKING_TEXT, EventMapper
from ._common import (
    RequestSpec,
    merge_headers,
    register_stream,
    start_stream,
    transcript_context,
    user_agent,
)
from ._output_cap import clamp_to_context, output_cap
from ._tool_choice import anthropic_tool_choice

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
    "uses_adaptive_thinking",
]

API = "anthropic-messages"
DEFAULT_BASE_URL = "https://api.anthropic.com"
ENV_API_KEY = "ANTHROPIC_API_KEY"
ANTHROPIC_VERSION = "2023-06-01"

DEFAULT_THINKING_BUDGETS: Mapping[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}
"""Thinking tokens per level (``xhigh`` and ``max`` think with ``high``'s budget);
``options.thinking_budgets`` overrides single levels."""

FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"

_EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_DEFAULT_MAX_TOKENS = 4096
_MIN_OUTPUT_TOKENS = 1024


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
        Failures of the request and aborts are ``StreamError`` events; nothing else is raised
        while it streams, except cancellation from outside.

    Raises:
        ProviderError: no API key in ``options`` or ``ANTHROPIC_API_KEY``, before any request
            (as the original's ``streamSimple`` throws); the loop makes it a failed reply.
    """
    return start_stream(
        model, context, options, client, _build_request, EventMapper, api_key_env=ENV_API_KEY
    )


def register(*, client: httpx.AsyncClient | None = None) -> None:
    """Serve api ``"anthropic-messages"`` in :func:`pi_core.stream_simple` (replacing any).

    :func:`~pi_core.stream_simple` uses this provider for its api without it; register it to
    replace another provider registered for the api, or, with ``client``, to send every request
    of the registry through that client.
    """
    register_stream(API, stream_anthropic, client)


def unregister() -> None:
    """Remove the provider of api ``"anthropic-messages"`` from the registry."""
    unregister_provider(API)


# --- the request --------------------------------------------------------------------------------


def _build_request(
    model: Model, context: Context, options: StreamOptions, api_key: str
) -> RequestSpec:
    """The Messages request for ``context``, sent with ``api_key``."""
    context = transcript_context(context)  # later system messages folded into the prompt
    fixed = {
        "User-Agent": user_agent(),
        "x-api-key": api_key,
        "anthropic-version": ANTHROPIC_VERSION,
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
    }
    betas = _betas(model, context, options)
    if betas:
        fixed["anthropic-beta"] = ",".join(betas)
    headers = merge_headers(fixed, model.headers, options.headers)
    return RequestSpec(_messages_url(model), headers, _body(model, context, options))


def _messages_url(model: Model) -> str:
    base = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def _forces_tool(options: StreamOptions) -> bool:
    return options.tool_choice is not None and options.tool_choice not in ("auto", "none")


def _thinking_on(model: Model, options: StreamOptions) -> bool:
    # The API refuses a forced tool with thinking on: forcing wins for that request.
    return model.reasoning and options.reasoning not in (None, "off") and not _forces_tool(options)


def uses_adaptive_thinking(model: Model) -> bool:
    """True for the models that think adaptively with an effort level rather than with a token
    budget, as ``model.compat.force_adaptive_thinking`` says (the catalogue sets it for Opus
    and Sonnet 4.6 and later; a model described by hand sets it itself)."""
    return model.compat is not None and model.compat.force_adaptive_thinking is True


def _betas(model: Model, context: Context, options: StreamOptions) -> list[str]:
    betas: list[str] = []
    compat = model.compat
    if context.tools and compat is not None and compat.supports_eager_tool_input_streaming is False:
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if _thinking_on(model, options) and not uses_adaptive_thinking(model):
        betas.append(INTERLEAVED_THINKING_BETA)  # adaptive models interleave without it
    return betas


def thinking_settings(
    model: Model, options: StreamOptions, context: Context | None = None
) -> tuple[int, int | None]:
    """``(max_tokens, thinking budget or None)`` for this call.

    The budget is added on top of the answer's tokens, capped at ``model.max_tokens`` and at
    what the context window leaves after ``context``; the budget always leaves 1024 tokens for
    the answer (as upstream).
    Models that think adaptively (:func:`uses_adaptive_thinking`) take no budget.
    """
    context = context or Context()
    base = output_cap(model, context, options.max_tokens) or _DEFAULT_MAX_TOKENS
    level = options.reasoning
    if level is None or not _thinking_on(model, options) or uses_adaptive_thinking(model):
        return base, None
    budgets = {**DEFAULT_THINKING_BUDGETS, **(options.thinking_budgets or {})}
    budget = budgets.get("high" if level in ("xhigh", "max") else level, budgets["medium"])
    max_tokens = base + budget
    if model.max_tokens:
        max_tokens = min(max_tokens, model.max_tokens)
    max_tokens = clamp_to_context(model, context, max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - _MIN_OUTPUT_TOKENS)
    return max_tokens, min(budget, max(0, max_tokens - _MIN_OUTPUT_TOKENS))


def _body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    cache = cache_control(model, options.cache_retention)
    max_tokens, budget = thinking_settings(model, options, context)
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
        eager = (
            model.compat is None or model.compat.supports_eager_tool_input_streaming is not False
        )
        body["tools"] = convert_tools(context.tools, eager=eager, cache=cache)
    _add_thinking(body, model, options, budget)
    compat = model.compat
    if (
        not _thinking_on(model, options)
        and options.temperature is not None
        and (
            compat is None
            or (compat.supports_temperature is not False and not compat.supports_mid_convo_effort)
        )
    ):
        body["temperature"] = options.temperature  # the API refuses it with thinking
    user_id = (options.metadata or {}).get("user_id")
    if isinstance(user_id, str):
        body["metadata"] = {"user_id": user_id}
    if options.tool_choice is not None and context.tools:
        body["tool_choice"] = anthropic_tool_choice(options.tool_choice)
    return body


def _add_thinking(
    body: dict[str, Any], model: Model, options: StreamOptions, budget: int | None
) -> None:
    if not model.reasoning:
        return
    if not _thinking_on(model, options):
        if thinking_can_be_off(model):  # a model that always thinks is not told to stop
            body["thinking"] = {"type": "disabled"}
    elif uses_adaptive_thinking(model):
        level = options.reasoning or ""
        body["thinking"] = {"type": "adaptive", "display": "summarized"}
        body["output_config"] = {
            "effort": mapped_level(model, level) or _EFFORTS.get(level, "high")
        }
    else:
        body["thinking"] = {
            "type": "enabled",
            "budget_tokens": budget or 0,
            "display": "summarized",  # the API's default for these models; said as upstream does
        }
