"""Which Chat Completions dialect a model's server speaks: detection by base URL and provider.

:func:`resolve_compat` returns a :class:`~pi_core.ModelCompat` with every field set: what is
detected for the server, overridden field by field by ``model.compat``.

* api.openai.com: everything OpenAI offers (``developer`` role for reasoning models, ``store``,
  ``max_completion_tokens``, ``reasoning_effort``).
* Hosted services known to the TypeScript original (OpenRouter, DeepSeek, xAI, Cerebras, z.ai,
  Moonshot, Chutes, OpenCode, Cloudflare, Groq, Mistral, Together, Fireworks …) get its settings:
  DeepSeek's thinking switch and ``reasoning_content`` on replayed messages, OpenRouter's
  ``reasoning`` object and ``cache_control`` for its Anthropic models, ``max_tokens`` where
  ``max_completion_tokens`` is refused.
* Any other server (a local vLLM, Ollama, llama.cpp or LM Studio, a company gateway) gets the
  settings every compatible server understands: ``system`` role, ``max_tokens``, no ``store``,
  ``"content": ""`` rather than ``null`` beside tool calls (llama.cpp's templates refuse
  ``null``); ``reasoning_effort`` still goes out for reasoning models.
* Only OpenAI's own API gets the ``developer`` role; no server gets ``strict: false``.
"""

from __future__ import annotations

import attrs

from .._compat import ModelCompat, ThinkingFormat
from .._messages import Model

__all__ = ["resolve_compat"]

OPENAI_HOST = "api.openai.com"

# Hosted services that take OpenAI's own field names, found by their address alone.
_OPENAI_LIKE_HOSTS = ("openrouter.ai", "ai-gateway.vercel.sh", "api.groq.com", "api.mistral.ai")


def resolve_compat(model: Model) -> ModelCompat:
    """The detected settings for ``model``, with every field ``model.compat`` sets taken over."""
    detected = detect_compat(model)
    if model.compat is None:
        return detected
    overrides = {
        field.name: value
        for field in attrs.fields(ModelCompat)
        if (value := getattr(model.compat, field.name)) is not None
    }
    return attrs.evolve(detected, **overrides)


def detect_compat(model: Model) -> ModelCompat:
    """The settings detected from ``model.base_url`` and ``model.provider`` alone."""
    url = model.base_url or f"https://{OPENAI_HOST}/v1"
    provider = model.provider
    is_zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in url or "open.bigmodel.cn" in url
    is_together = provider == "together" or "api.together.ai" in url or "api.together.xyz" in url
    is_moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in url
    is_cf_workers = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in url
    is_cf_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in url
    is_ant_ling = provider == "ant-ling" or "api.ant-ling.com" in url
    is_deepseek = provider == "deepseek" or "deepseek.com" in url.lower()
    is_grok = provider == "xai" or "api.x.ai" in url
    is_chutes = "chutes.ai" in url
    non_standard = (
        is_nvidia
        or provider == "cerebras"
        or "cerebras.ai" in url
        or is_grok
        or is_together
        or is_chutes
        or is_deepseek
        or is_zai
        or is_moonshot
        or provider == "opencode"
        or "opencode.ai" in url
        or is_cf_workers
        or is_cf_gateway
        or is_ant_ling
    )
    if not (non_standard or _hosted(provider, url)):
        return _generic_server()
    use_max_tokens = (
        is_chutes
        or is_deepseek
        or is_moonshot
        or is_cf_gateway
        or is_together
        or is_nvidia
        or is_ant_ling
        or is_zai
    )
    no_effort = (
        is_grok or is_zai or is_moonshot or is_together or is_cf_gateway or is_nvidia or is_ant_ling
    )
    return ModelCompat(
        supports_store=not non_standard,
        supports_developer_role=provider == "openai" or OPENAI_HOST in url,
        supports_reasoning_effort=not no_effort,
        supports_usage_in_streaming=True,
        supports_finish_reason=True,
        max_tokens_field="max_tokens" if use_max_tokens else "max_completion_tokens",
        requires_tool_result_name=False,
        requires_assistant_after_tool_result=False,
        requires_non_null_assistant_content=False,
        requires_tools_with_tool_history=False,
        requires_thinking_as_text=False,
        requires_reasoning_content_on_assistant_messages=is_deepseek,
        thinking_format=_thinking_format(
            is_deepseek, is_zai, is_together, is_ant_ling, is_openrouter
        ),
        zai_tool_stream=False,
        supports_strict_mode=False,  # only where the catalogue says so
        cache_control_format="anthropic"
        if is_openrouter and model.id.startswith("anthropic/")
        else None,
        send_session_affinity_headers=is_openrouter,
        session_affinity_format="openrouter" if is_openrouter else "openai",
        supports_long_cache_retention=not (
            is_together or is_cf_workers or is_cf_gateway or is_nvidia or is_ant_ling
        ),
    )


def _hosted(provider: str, url: str) -> bool:
    """Whether the model is a hosted service's (OpenAI's own settings apply), not a server of
    one's own: a provider of the catalogue, or the address of a service known to take them."""
    from ..models import get_providers  # the catalogue, on the first model that needs it

    return (
        OPENAI_HOST in url
        or provider in get_providers()
        or any(host in url for host in _OPENAI_LIKE_HOSTS)
    )


def _thinking_format(
    deepseek: bool, zai: bool, together: bool, ant_ling: bool, openrouter: bool
) -> ThinkingFormat:
    for found, name in (
        (deepseek, "deepseek"),
        (zai, "zai"),
        (together, "together"),
        (ant_ling, "ant-ling"),
        (openrouter, "openrouter"),
    ):
        if found:
            return name  # type: ignore[return-value]
    return "openai"


def _generic_server() -> ModelCompat:
    """What every OpenAI-compatible server understands (vLLM, Ollama, llama.cpp, LM Studio …)."""
    return ModelCompat(
        supports_store=False,
        supports_developer_role=False,
        supports_reasoning_effort=True,
        supports_usage_in_streaming=True,
        supports_finish_reason=True,
        max_tokens_field="max_tokens",
        requires_tool_result_name=False,
        requires_assistant_after_tool_result=False,
        requires_non_null_assistant_content=True,
        requires_tools_with_tool_history=False,
        requires_thinking_as_text=False,
        requires_reasoning_content_on_assistant_messages=False,
        thinking_format="openai",
        zai_tool_stream=False,
        supports_strict_mode=False,
        cache_control_format=None,
        send_session_affinity_headers=False,
        session_affinity_format="openai",
        supports_long_cache_retention=False,
    )
