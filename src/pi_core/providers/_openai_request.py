"""The body of a Chat Completions request, shaped by the server's :class:`~pi_core.ModelCompat`."""

from __future__ import annotations

from typing import Any

from .._compat import ModelCompat
from .._messages import AssistantMessage, Context, Model, ToolCall, ToolResultMessage
from .._options import StreamOptions
from .._thinking import clamp_thinking_level, mapped_level, thinking_can_be_off
from ._common import prompt_cache_key
from ._openai_compat import OPENAI_HOST
from ._openai_convert import convert_messages, convert_tools
from ._output_cap import output_cap
from ._tool_choice import add_sampling_params, completions_tool_choice

__all__ = ["build_body", "session_headers"]

Wire = dict[str, Any]


def build_body(
    model: Model, context: Context, options: StreamOptions, compat: ModelCompat
) -> dict[str, Any]:
    """The JSON body for ``context`` as this model's server takes it."""
    retention = options.cache_retention or "short"
    long_cache = retention == "long" and bool(compat.supports_long_cache_retention)
    messages = convert_messages(model, context, compat)
    body: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if options.session_id and (
        (OPENAI_HOST in model.base_url and retention != "none") or long_cache
    ):
        body["prompt_cache_key"] = prompt_cache_key(options.session_id)
    if long_cache:
        body["prompt_cache_retention"] = "24h"
    if compat.supports_usage_in_streaming is not False:
        body["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        body["store"] = False
    max_tokens = output_cap(model, context, options.max_tokens)
    if max_tokens is not None:
        body[compat.max_tokens_field or "max_tokens"] = max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    _add_tools(body, context, compat)
    if compat.cache_control_format == "anthropic" and retention != "none":
        marker: Wire = {"type": "ephemeral", **({"ttl": "1h"} if long_cache else {})}
        _mark_for_cache(messages, body.get("tools"), marker)
    _add_reasoning(body, model, options, compat)
    _add_routing(body, model, compat)
    if options.tool_choice is not None and context.tools:
        body["tool_choice"] = completions_tool_choice(options.tool_choice)
    add_sampling_params(body, options)
    return body


def session_headers(options: StreamOptions, compat: ModelCompat) -> dict[str, str]:
    """The session-affinity headers of servers that route a session to one cache."""
    session = options.session_id
    if not session or not compat.send_session_affinity_headers or options.cache_retention == "none":
        return {}
    if compat.session_affinity_format == "openrouter":
        return {"x-session-id": session}
    headers = {"x-client-request-id": session, "x-session-affinity": session}
    if compat.session_affinity_format != "openai-nosession":
        headers["session_id"] = session
    return headers


def _add_tools(body: Wire, context: Context, compat: ModelCompat) -> None:
    if context.tools:
        body["tools"] = convert_tools(context.tools)
        if compat.zai_tool_stream:
            body["tool_stream"] = True
    elif compat.requires_tools_with_tool_history and _has_tool_history(context):
        body["tools"] = []


def _has_tool_history(context: Context) -> bool:
    return any(
        isinstance(message, ToolResultMessage)
        or (
            isinstance(message, AssistantMessage)
            and any(isinstance(block, ToolCall) for block in message.content)
        )
        for message in context.messages
    )


def _level(model: Model, options: StreamOptions) -> str | None:
    """The level asked of the model (the nearest it takes), or ``None`` when none is asked."""
    level = options.reasoning
    if level is None or level == "off":
        return None
    clamped = clamp_thinking_level(model, level)
    return None if clamped == "off" else clamped


def _add_reasoning(body: Wire, model: Model, options: StreamOptions, compat: ModelCompat) -> None:
    if not model.reasoning:
        return
    level = _level(model, options)
    effort = None if level is None else mapped_level(model, level) or level
    fmt = compat.thinking_format or "openai"
    if fmt == "zai":
        body["thinking"] = {"type": "enabled", "clear_thinking": False} if level else _disabled()
    elif fmt == "qwen":
        body["enable_thinking"] = level is not None
    elif fmt == "qwen-chat-template":
        body["chat_template_kwargs"] = {
            "enable_thinking": level is not None,
            "preserve_thinking": True,
        }
        return
    elif fmt == "deepseek":
        if level is not None:
            body["thinking"] = {"type": "enabled"}
        elif thinking_can_be_off(model):
            body["thinking"] = _disabled()
    elif fmt == "openrouter":
        if effort is not None:
            body["reasoning"] = {"effort": effort}
        elif thinking_can_be_off(model):
            body["reasoning"] = {"effort": mapped_level(model, "off") or "none"}
        return
    elif fmt == "ant-ling" and level is not None:
        if (word := mapped_level(model, level)) is not None:
            body["reasoning"] = {"effort": word}  # only in the model's own words
        return
    elif fmt == "together":
        body["reasoning"] = {"enabled": level is not None}
    elif fmt == "baseten":
        _add_baseten_effort(body, model, level, compat)
        return
    if not compat.supports_reasoning_effort:
        return
    if effort is not None:
        body["reasoning_effort"] = effort
    elif fmt in ("openai", "ant-ling") and (off := mapped_level(model, "off")) is not None:
        body["reasoning_effort"] = off  # the model's own word for thinking off


def _add_baseten_effort(body: Wire, model: Model, level: str | None, compat: ModelCompat) -> None:
    """Baseten's ``reasoning_effort``: the map's word for the level (for ``off`` without one),
    the level itself where the map does not name it, nothing where the map rules it out."""
    if not compat.supports_reasoning_effort:
        return
    key = level or "off"
    levels = model.thinking_level_map or {}
    if key not in levels:
        if level is not None:
            body["reasoning_effort"] = level
    elif isinstance(word := levels[key], str):
        body["reasoning_effort"] = word


def _disabled() -> Wire:
    return {"type": "disabled"}


def _add_routing(body: Wire, model: Model, compat: ModelCompat) -> None:
    if "openrouter.ai" in model.base_url and compat.open_router_routing:
        body["provider"] = compat.open_router_routing
    routing = compat.vercel_gateway_routing
    if "ai-gateway.vercel.sh" in model.base_url and routing:
        gateway = {key: routing[key] for key in ("only", "order") if routing.get(key)}
        if gateway:
            body["providerOptions"] = {"gateway": gateway}


def _mark_for_cache(messages: list[Wire], tools: list[Wire] | None, marker: Wire) -> None:
    """Anthropic-style cache markers: the system prompt, the last tool, the last user or
    assistant text (OpenRouter passes them on to Anthropic's models)."""
    for message in messages:
        if message["role"] in ("system", "developer"):
            _mark_text(message, marker)
            break
    if tools:
        tools[-1]["cache_control"] = marker
    for message in reversed(messages):
        if message["role"] in ("user", "assistant") and _mark_text(message, marker):
            break


def _mark_text(message: Wire, marker: Wire) -> bool:
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": marker}]
        return True
    if isinstance(content, list):
        for part in reversed(content):
            if part.get("type") == "text":
                part["cache_control"] = marker
                return True
    return False
