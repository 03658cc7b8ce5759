"""ModelCompat for OpenAI-compatible servers: detection by base URL, overrides, and the request
each setting shapes."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from _replay_server import Reply, open_replay_server, sse_event
from _stream_checks import collect, final_message

from pi_core import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    ModelCompat,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_core.providers import openai
from pi_core.providers._openai_compat import resolve_compat
from pi_core.providers._openai_convert import normalize_call_id
from pi_core.serialization import from_dict, to_dict

pytestmark = pytest.mark.anyio

KEY = StreamOptions(api_key="sk-test")
TOOL = Tool("echo", "Echo it.", {"type": "object"})


def model(base_url: str, model_id: str = "m", **fields: Any) -> Model:
    return Model(model_id, api="openai-completions", provider="custom", base_url=base_url, **fields)


def request_of(
    model: Model, context: Context, options: StreamOptions = KEY
) -> tuple[dict[str, str], dict[str, Any]]:
    spec = openai._build_request(model, context, options, options.api_key or "")
    return spec.headers, json.loads(spec.encode())


def tool_round(call_id: str = "call_1") -> list[Message]:
    return [
        UserMessage("Hi"),
        AssistantMessage(
            [ThinkingContent("hmm", "reasoning_content"), ToolCall(call_id, "echo", {"x": 1})],
            "openai-completions",
            "custom",
            "m",
            stop_reason="toolUse",
        ),
        ToolResultMessage(call_id, "echo", [TextContent("1")]),
        UserMessage("Thanks"),
    ]


# --- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        (
            "https://api.openai.com/v1",
            {"supports_store": True, "supports_developer_role": True,
             "max_tokens_field": "max_completion_tokens", "supports_strict_mode": False},
        ),
        (
            "https://api.deepseek.com/v1",
            {"supports_store": False, "supports_developer_role": False, "thinking_format": "deepseek",
             "requires_reasoning_content_on_assistant_messages": True, "max_tokens_field": "max_tokens"},
        ),
        ("https://openrouter.ai/api/v1", {"thinking_format": "openrouter", "cache_control_format": None}),
        ("http://localhost:8000/v1", {"supports_store": False, "max_tokens_field": "max_tokens",
                                      "supports_strict_mode": False, "thinking_format": "openai",
                                      "requires_non_null_assistant_content": True}),
        ("http://127.0.0.1:11434/v1", {"supports_developer_role": False, "supports_reasoning_effort": True}),
        ("http://10.0.0.5:8080/v1", {"supports_store": False, "supports_long_cache_retention": False}),
        ("https://api.x.ai/v1", {"supports_reasoning_effort": False, "supports_store": False}),
        ("https://api.moonshot.ai/v1", {"max_tokens_field": "max_tokens", "supports_strict_mode": False}),
    ],
)  # fmt: skip
def test_detection_by_base_url(base_url: str, expected: dict[str, Any]) -> None:
    resolved = resolve_compat(model(base_url))
    assert {name: getattr(resolved, name) for name in expected} == expected
    # every field is decided once resolved, except the optional markers and routings
    optional = {"cache_control_format", "open_router_routing", "vercel_gateway_routing",
                "send_session_id_header", "supports_eager_tool_input_streaming",
                "supports_max_output_tokens", "supports_mid_convo_system_messages",
                "supports_temperature", "force_adaptive_thinking",
                "supports_strict_tools", "supports_mid_convo_effort", "extra"}  # fmt: skip
    assert all(
        getattr(resolved, f.name) is not None
        for f in attrs.fields(ModelCompat)
        if f.name not in optional
    )


def test_openrouter_anthropic_models_get_cache_markers() -> None:
    resolved = resolve_compat(model("https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4.5"))
    assert resolved.cache_control_format == "anthropic"


def test_fields_set_on_the_model_override_detection() -> None:
    compat = ModelCompat(supports_store=True, max_tokens_field="max_completion_tokens")
    resolved = resolve_compat(model("http://localhost:8000/v1", compat=compat))
    assert (resolved.supports_store, resolved.max_tokens_field) == (True, "max_completion_tokens")
    assert resolved.supports_developer_role is False  # not set: still detected


def test_compat_serialises_as_the_originals_camel_case_record() -> None:
    compat = ModelCompat(
        supports_developer_role=False,
        requires_reasoning_content_on_assistant_messages=True,
        thinking_format="qwen-chat-template",
        open_router_routing={"only": ["groq"]},
    )
    data = to_dict(model("https://x", compat=compat))
    assert data["compat"] == {
        "supportsDeveloperRole": False,
        "requiresReasoningContentOnAssistantMessages": True,
        "thinkingFormat": "qwen-chat-template",
        "openRouterRouting": {"only": ["groq"]},
    }
    assert from_dict(data, Model).compat == compat
    assert "compat" not in to_dict(model("https://x"))


# --- the request --------------------------------------------------------------------------------


def test_local_server_gets_the_plain_dialect() -> None:
    reasoner = model("http://localhost:8000/v1", reasoning=True)
    options = StreamOptions(api_key="k", max_tokens=100, reasoning="high")
    _, body = request_of(reasoner, Context("sys", [UserMessage("Hi")], [TOOL]), options)
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert body["max_tokens"] == 100 and "store" not in body
    assert "strict" not in body["tools"][0]["function"]
    assert body["reasoning_effort"] == "high"


def test_official_api_gets_developer_role_and_store_but_no_strict_false() -> None:
    reasoner = model("https://api.openai.com/v1", reasoning=True)
    options = StreamOptions(api_key="k", max_tokens=100, session_id="s1")
    _, body = request_of(reasoner, Context("sys", [UserMessage("Hi")], [TOOL]), options)
    assert body["messages"][0]["role"] == "developer"
    assert (body["store"], body["max_completion_tokens"]) == (False, 100)
    assert "strict" not in body["tools"][0]["function"]  # off when left out
    assert body["prompt_cache_key"] == "s1"


def test_a_long_session_id_is_cut_to_the_cache_key_openai_takes() -> None:
    session = "é" * 80  # characters, not bytes, as OpenAI counts them
    options = StreamOptions(api_key="k", session_id=session)
    _, body = request_of(
        model("https://api.openai.com/v1"), Context("s", [UserMessage("Hi")]), options
    )
    assert body["prompt_cache_key"] == "é" * 64


@pytest.mark.parametrize(
    ("base_url", "provider"),
    [("https://openrouter.ai/api/v1", "openrouter"), ("http://127.0.0.1:9/v1", "groq")],
)
def test_only_openai_gets_the_developer_role(base_url: str, provider: str) -> None:
    reasoner = attrs.evolve(model(base_url, reasoning=True), provider=provider)
    _, body = request_of(reasoner, Context("sys", [UserMessage("Hi")]), StreamOptions(api_key="k"))
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert body["store"] is False  # a hosted service known by its name, wherever it is served


def test_deepseek_thinking_switch_and_reasoning_content_on_replayed_messages() -> None:
    deepseek = model("https://api.deepseek.com", "deepseek-chat", reasoning=True)
    history: list[Message] = [
        UserMessage("a"),
        AssistantMessage([TextContent("b")], "openai-completions", "custom", "deepseek-chat"),
        UserMessage("c"),
    ]
    _, off = request_of(deepseek, Context(None, history))
    assert off["thinking"] == {"type": "disabled"} and "reasoning_effort" not in off
    assert off["messages"][1] == {"role": "assistant", "content": "b", "reasoning_content": ""}
    _, on = request_of(
        deepseek, Context(None, history), StreamOptions(api_key="k", reasoning="low")
    )
    assert (on["thinking"], on["reasoning_effort"]) == ({"type": "enabled"}, "low")


def test_openrouter_reasoning_routing_and_anthropic_cache_markers() -> None:
    routing = {"order": ["anthropic"], "allow_fallbacks": False}
    router = model(
        "https://openrouter.ai/api/v1",
        "anthropic/claude-sonnet-4.5",
        reasoning=True,
        compat=ModelCompat(open_router_routing=routing),
    )
    context = Context("sys", [UserMessage("Hi")], [TOOL, Tool("two", "Two.", {"type": "object"})])
    _, body = request_of(router, context, StreamOptions(api_key="k", reasoning="medium"))
    assert body["reasoning"] == {"effort": "medium"} and "reasoning_effort" not in body
    assert body["provider"] == routing
    marker = {"type": "ephemeral"}
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "sys", "cache_control": marker}
    ]
    assert body["messages"][1]["content"][-1]["cache_control"] == marker
    assert "cache_control" not in body["tools"][0] and body["tools"][1]["cache_control"] == marker
    _, off = request_of(router, context)
    assert off["reasoning"] == {"effort": "none"}


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("zai", {"thinking": {"type": "enabled", "clear_thinking": False}, "reasoning_effort": "low"}),
        ("qwen", {"enable_thinking": True, "reasoning_effort": "low"}),
        ("qwen-chat-template", {"chat_template_kwargs": {"enable_thinking": True, "preserve_thinking": True}}),
    ],
)  # fmt: skip
def test_thinking_formats(fmt: Any, expected: dict[str, Any]) -> None:
    reasoner = model(
        "http://localhost:1/v1", reasoning=True, compat=ModelCompat(thinking_format=fmt)
    )
    _, body = request_of(
        reasoner, Context(None, [UserMessage("Hi")]), StreamOptions(api_key="k", reasoning="low")
    )
    assert {key: body[key] for key in expected} == expected
    assert ("reasoning_effort" in body) == ("reasoning_effort" in expected)


def test_empty_tools_when_the_history_has_calls_but_no_tools_are_defined() -> None:
    # Only for a server that asks for them (some proxies in front of Anthropic), as 1.6.0 does.
    _, body = request_of(model("http://localhost:1/v1"), Context(None, tool_round()))
    assert "tools" not in body
    asks = model("http://localhost:1/v1", compat=ModelCompat(requires_tools_with_tool_history=True))
    _, body = request_of(asks, Context(None, tool_round()))
    assert body["tools"] == []
    _, plain = request_of(asks, Context(None, [UserMessage("Hi")]))
    assert "tools" not in plain


def test_tool_result_name_bridge_message_and_thinking_as_text() -> None:
    compat = ModelCompat(
        requires_tool_result_name=True,
        requires_assistant_after_tool_result=True,
        requires_thinking_as_text=True,
    )
    _, body = request_of(model("http://localhost:1/v1", compat=compat), Context(None, tool_round()))
    roles = [message["role"] for message in body["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert (
        body["messages"][1]["content"] == "hmm" and "reasoning_content" not in body["messages"][1]
    )
    assert body["messages"][2]["name"] == "echo"
    assert body["messages"][3] == {
        "role": "assistant",
        "content": "I have processed the tool results.",
    }


def test_bridge_before_the_images_of_tool_results() -> None:
    seer = model("http://localhost:1/v1", input=("text", "image"),
                 compat=ModelCompat(requires_assistant_after_tool_result=True))  # fmt: skip
    history = tool_round()
    history[2] = ToolResultMessage("call_1", "echo", [ImageContent("AAAA", "image/png")])
    _, body = request_of(seer, Context(None, history))
    roles = [message["role"] for message in body["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "user"]


def test_session_affinity_headers_and_long_retention() -> None:
    compat = ModelCompat(send_session_affinity_headers=True, supports_long_cache_retention=True)
    options = StreamOptions(api_key="k", session_id="s9", cache_retention="long")
    headers, body = request_of(
        model("http://localhost:1/v1", compat=compat), Context(None, [UserMessage("Hi")]), options
    )
    assert (
        headers["session_id"],
        headers["x-client-request-id"],
        headers["x-session-affinity"],
    ) == ("s9",) * 3
    assert (body["prompt_cache_key"], body["prompt_cache_retention"]) == ("s9", "24h")
    headers, _ = request_of(model("http://localhost:1/v1", compat=compat), Context(None, [UserMessage("Hi")]),
                            attrs.evolve(options, cache_retention="none"))  # fmt: skip
    assert "session_id" not in headers


# --- foreign tool call ids ------------------------------------------------------------------------


def test_foreign_ids_are_normalised_alike_in_calls_and_results() -> None:
    composite = "call_abc|fc_" + "x+/=" * 120
    long_id = "toolu_" + "a" * 60
    for call_id in (composite, long_id):
        _, body = request_of(model("https://api.openai.com/v1"), Context(None, tool_round(call_id)))
        sent = body["messages"][1]["tool_calls"][0]["id"]
        assert body["messages"][2]["tool_call_id"] == sent == normalize_call_id(call_id)
        assert len(sent) <= 40 and sent.replace("_", "").replace("-", "").isalnum()
    assert normalize_call_id(composite) == "call_abc"
    assert normalize_call_id("call_ok-1") == "call_ok-1"
    assert normalize_call_id("x" * 50 + "1") != normalize_call_id("x" * 50 + "2")


async def test_a_served_request_follows_compat_and_normalises_foreign_ids(
    anyio_backend: str,
) -> None:
    ok = [
        sse_event({"id": "c", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
        sse_event("[DONE]"),
    ]  # fmt: skip
    composite = "call_abc|fc_" + "+/=" * 50
    async with open_replay_server([Reply(200, ok)], anyio_backend) as server:
        target = model(
            server.base_url + "/v1",
            reasoning=True,
            compat=ModelCompat(thinking_format="deepseek", requires_tool_result_name=True),
        )
        options = StreamOptions(api_key="k", reasoning="high")
        events = await collect(
            openai.stream_openai(target, Context(None, tool_round(composite)), options)
        )
        assert final_message(events).stop_reason == "stop"
        sent = server.requests[0].body
    assert (sent["thinking"], sent["reasoning_effort"]) == ({"type": "enabled"}, "high")
    assert "tools" not in sent
    call, result = sent["messages"][1]["tool_calls"][0], sent["messages"][2]
    assert call["id"] == result["tool_call_id"] == "call_abc"
    assert result["name"] == "echo"


@pytest.mark.parametrize(
    ("target", "sent"),
    [
        (model("https://openrouter.ai/api/v1"), {"x-session-id"}),
        (
            model("https://llm.example/v1", compat=ModelCompat(send_session_affinity_headers=True)),
            {"session_id", "x-client-request-id", "x-session-affinity"},
        ),
        (
            model(
                "https://llm.example/v1",
                compat=ModelCompat(
                    send_session_affinity_headers=True, session_affinity_format="openai-nosession"
                ),
            ),
            {"x-client-request-id", "x-session-affinity"},
        ),
        (model("https://api.openai.com/v1"), set()),
    ],
)
def test_session_affinity_headers_in_the_servers_own_format(target: Model, sent: set[str]) -> None:
    headers, _ = request_of(
        target, Context(None, [UserMessage("Hi")]), StreamOptions(api_key="k", session_id="s")
    )
    names = {"session_id", "x-client-request-id", "x-session-affinity", "x-session-id"}
    assert {name for name in headers if name in names} == sent


@pytest.mark.parametrize(
    ("provider", "max_tokens_field", "store"),
    [
        ("nvidia", "max_tokens", False),  # known to 1.6.0 as a service of its own dialect
        ("together", "max_tokens", False),
        ("huggingface", "max_completion_tokens", True),  # a hosted service: OpenAI's dialect
    ],
)
def test_catalogue_services_get_their_dialect_not_a_local_servers(
    provider: str, max_tokens_field: str, store: bool
) -> None:
    from pi_core.models import get_models

    hosted = next(m for m in get_models(provider) if m.api == "openai-completions")
    compat = resolve_compat(hosted)
    assert (compat.max_tokens_field, compat.supports_store) == (max_tokens_field, store)
    assert compat.requires_non_null_assistant_content is False
