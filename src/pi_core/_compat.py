"""``ModelCompat``: what a server behind a provider's API accepts, where servers differ."""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["MaxTokensField", "ModelCompat", "SessionAffinityFormat", "ThinkingFormat"]

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
SessionAffinityFormat = Literal["openai", "openai-nosession", "openrouter"]
ThinkingFormat = Literal[
    "openai",
    "openrouter",
    "deepseek",
    "zai",
    "qwen",
    "qwen-chat-template",
    "together",
    "ant-ling",
    "baseten",
]


@attrs.frozen(kw_only=True)
class ModelCompat:
    """Compatibility settings of a model's server; every field ``None`` means "detect it".

    Servers that speak one API (OpenAI's Chat Completions above all) differ in the details: the
    name of the max-tokens field, the role of the system prompt, how reasoning is switched on.
    The providers detect the usual servers from ``Model.base_url`` (and ``Model.provider``);
    a field set here overrides that detection for this model. It serialises as the ``compat``
    record of the TypeScript original (camelCase keys), and the model catalogue fills it in
    where that original does. Fields that do not apply to a model's API are ignored.
    """

    # --- OpenAI-compatible Chat Completions -----------------------------------------------------
    supports_store: bool | None = None
    """The server takes ``store`` (it is sent as ``false``)."""
    supports_developer_role: bool | None = None
    """The system prompt of a reasoning model goes out as role ``developer`` (else ``system``);
    detected for OpenAI's own API only, since other servers' chat templates often refuse it."""
    supports_reasoning_effort: bool | None = None
    """The server takes ``reasoning_effort``."""
    supports_usage_in_streaming: bool | None = None
    """The server takes ``stream_options: {include_usage: true}`` (default true)."""
    supports_finish_reason: bool | None = None
    """The server ends a reply with a ``finish_reason`` (default true); when false, a stream
    that ends without one is complete, a tool call reply when it calls tools."""
    max_tokens_field: MaxTokensField | None = None
    """The name under which ``StreamOptions.max_tokens`` is sent."""
    requires_tool_result_name: bool | None = None
    """Tool results carry the tool's ``name``."""
    requires_assistant_after_tool_result: bool | None = None
    """A user message may not follow tool results directly: a short assistant line is put
    between them."""
    requires_non_null_assistant_content: bool | None = None
    """An assistant message that only calls tools carries ``"content": ""`` instead of
    ``null`` (llama.cpp's and other local servers' templates refuse ``null``)."""
    requires_tools_with_tool_history: bool | None = None
    """Send ``tools: []`` when the conversation has tool calls but the request no tools (some
    proxies in front of Anthropic refuse tool calls without tools)."""
    requires_thinking_as_text: bool | None = None
    """Earlier reasoning is sent back as plain text in the assistant message."""
    requires_reasoning_content_on_assistant_messages: bool | None = None
    """Every earlier assistant message of a reasoning model carries ``reasoning_content``
    (empty when there was none), as DeepSeek requires."""
    thinking_format: ThinkingFormat | None = None
    """How reasoning is switched on: ``reasoning_effort`` (openai), ``reasoning: {effort}``
    (openrouter), ``thinking: {type}`` plus ``reasoning_effort`` (deepseek, and zai with
    ``clear_thinking: false``), ``enable_thinking`` (qwen),
    ``chat_template_kwargs.enable_thinking`` (qwen-chat-template), ``reasoning: {enabled}``
    plus ``reasoning_effort`` (together), ``reasoning: {effort}`` in the model's map's words
    only (ant-ling), or ``reasoning_effort`` in the map's words, also for off (baseten)."""
    open_router_routing: dict[str, Any] | None = attrs.field(default=None, hash=False)
    """OpenRouter's provider routing preferences, sent as ``provider``."""
    vercel_gateway_routing: dict[str, Any] | None = attrs.field(default=None, hash=False)
    """Vercel AI Gateway's routing (``only``, ``order``), sent as ``providerOptions.gateway``."""
    zai_tool_stream: bool | None = None
    """Send ``tool_stream: true`` (z.ai streams tool call arguments only then)."""
    supports_strict_mode: bool | None = None
    """Tool definitions may carry ``strict``."""
    cache_control_format: Literal["anthropic"] | None = None
    """``"anthropic"``: mark the system prompt, the last tool and the last user or assistant
    text with Anthropic's ``cache_control`` (OpenRouter's Anthropic models)."""
    send_session_affinity_headers: bool | None = None
    """Send ``StreamOptions.session_id`` in headers while caching is on, as
    ``session_affinity_format`` says (``session_id``, ``x-client-request-id`` and
    ``x-session-affinity``; OpenRouter's ``x-session-id``)."""
    supports_long_cache_retention: bool | None = None
    """Cache retention ``"long"`` is honoured (``prompt_cache_retention: "24h"``, or an
    Anthropic ``ttl`` of one hour); default true."""

    # --- OpenAI Responses -----------------------------------------------------------------------
    send_session_id_header: bool | None = None
    """Send ``StreamOptions.session_id`` as the ``session-id`` header while caching is on."""
    session_affinity_format: SessionAffinityFormat | None = None
    """How the session id routes a session's requests to one cache (Responses and Chat
    Completions): ``"openai"`` (with the session-id header), ``"openai-nosession"`` (without
    it) or ``"openrouter"`` (``x-session-id`` alone); detected from the provider and address."""
    supports_max_output_tokens: bool | None = None
    """The server takes ``max_output_tokens`` (default true)."""

    # --- every API ------------------------------------------------------------------------------
    supports_mid_convo_system_messages: bool | None = None
    """A system message later in the conversation may be sent where it stands; otherwise (the
    default) all system messages are folded into the one system prompt."""
    supports_temperature: bool | None = None
    """The model takes ``temperature`` (default true; some reasoning models refuse it)."""

    # --- Anthropic Messages ---------------------------------------------------------------------
    force_adaptive_thinking: bool | None = None
    """The model thinks adaptively, with an effort level, instead of with a token budget."""
    supports_strict_tools: bool | None = None
    """Tool definitions may ask for strict schema adherence (``strict: true``)."""
    supports_mid_convo_effort: bool | None = None
    """The model takes a change of effort mid-conversation (the newest Claude models); such a
    model is sent no ``temperature``."""
    supports_eager_tool_input_streaming: bool | None = None
    """Tools carry ``eager_input_streaming: true``; when false, the fine-grained tool streaming
    beta header is sent instead (default true)."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)
    """The settings of the catalogue (or of a newer writer) that pi_core does not model, kept so
    that they are written back unchanged."""
