"""The Anthropic request: eager tool input streaming, cached tools, the interleaved-thinking beta,
adaptive thinking with an effort, thinking switched off, long cache retention by compat."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _replay_server import Reply, open_replay_server, sse_event
from _stream_checks import collect, final_message

from pi_core import Context, Model, ModelCompat, StreamOptions, Tool, UserMessage
from pi_core.models import get_model
from pi_core.providers import anthropic

pytestmark = pytest.mark.anyio

TOOLS = [Tool("a", "A.", {"type": "object"}), Tool("b", "B.", {"type": "object"})]
CONTEXT = Context("Be brief.", [UserMessage("Hi")], TOOLS)


ADAPTIVE = ModelCompat(force_adaptive_thinking=True)


def claude(model_id: str = "claude-sonnet-4-5", **fields: Any) -> Model:
    fields.setdefault("reasoning", True)
    return Model(
        model_id, api="anthropic-messages", provider="anthropic", max_tokens=64000, **fields
    )


def request_of(
    model: Model, options: StreamOptions, context: Context = CONTEXT
) -> tuple[dict[str, str], dict[str, Any]]:
    spec = anthropic._build_request(model, context, options, options.api_key or "")
    return spec.headers, json.loads(spec.encode())


def test_tools_stream_eagerly_and_the_last_one_is_cached() -> None:
    _, body = request_of(claude(), StreamOptions(api_key="k"))
    assert [tool.get("eager_input_streaming") for tool in body["tools"]] == [True, True]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == {"type": "ephemeral"}
    _, uncached = request_of(claude(), StreamOptions(api_key="k", cache_retention="none"))
    assert all("cache_control" not in tool for tool in uncached["tools"])


def test_a_server_without_eager_streaming_gets_the_beta_header_instead() -> None:
    model = claude(compat=ModelCompat(supports_eager_tool_input_streaming=False))
    headers, body = request_of(model, StreamOptions(api_key="k"))
    assert all("eager_input_streaming" not in tool for tool in body["tools"])
    assert headers["anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14"


def test_budget_thinking_sends_the_interleaved_thinking_beta() -> None:
    headers, body = request_of(
        claude(), StreamOptions(api_key="k", reasoning="low", temperature=0.3)
    )
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "summarized"}
    assert "temperature" not in body and "output_config" not in body


@pytest.mark.parametrize("level", [None, "off"])
def test_reasoning_off_disables_thinking(level: Any) -> None:
    headers, body = request_of(
        claude(), StreamOptions(api_key="k", reasoning=level, temperature=0.3)
    )
    assert body["thinking"] == {"type": "disabled"}
    assert body["temperature"] == 0.3 and "anthropic-beta" not in headers
    _, plain = request_of(claude(reasoning=False), StreamOptions(api_key="k"))
    assert "thinking" not in plain


@pytest.mark.parametrize(
    ("level", "effort"),
    [("minimal", "low"), ("low", "low"), ("medium", "medium"), ("xhigh", "high")],
)
def test_adaptive_models_think_with_an_effort(level: Any, effort: str) -> None:
    options = StreamOptions(api_key="k", reasoning=level, max_tokens=4000)
    headers, body = request_of(claude("claude-sonnet-4-6", compat=ADAPTIVE), options)
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": effort}
    assert body["max_tokens"] == 4000  # no budget added
    assert "anthropic-beta" not in headers  # interleaved thinking is built in


def test_a_model_that_always_thinks_is_not_told_to_stop() -> None:
    _, body = request_of(claude(thinking_level_map={"off": None}), StreamOptions(api_key="k"))
    assert "thinking" not in body


@pytest.mark.parametrize(
    ("level", "effort"), [("xhigh", "xhigh"), ("max", "max"), ("medium", "medium")]
)
def test_adaptive_efforts_are_the_words_of_the_models_map(level: Any, effort: str) -> None:
    levels = {"xhigh": "xhigh", "max": "max"}
    model = claude("claude-opus-4-8", compat=ADAPTIVE, thinking_level_map=levels)
    _, body = request_of(model, StreamOptions(api_key="k", reasoning=level))
    assert body["output_config"] == {"effort": effort}


def test_the_catalogue_says_which_models_think_adaptively() -> None:
    # Read from the model's compat settings, not guessed from its id.
    for model_id in ("claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-7"):
        assert anthropic.uses_adaptive_thinking(get_model("anthropic", model_id))
    for model_id in ("claude-sonnet-4-5", "claude-haiku-4-5"):
        assert not anthropic.uses_adaptive_thinking(get_model("anthropic", model_id))
    assert not anthropic.uses_adaptive_thinking(claude("claude-sonnet-4-6"))  # by hand, unsaid
    assert anthropic.uses_adaptive_thinking(claude("any", compat=ADAPTIVE))


def test_temperature_is_left_out_for_models_that_refuse_it() -> None:
    options = StreamOptions(api_key="k", temperature=0.3)
    _, body = request_of(claude(compat=ModelCompat(supports_temperature=False)), options)
    assert "temperature" not in body
    _, body = request_of(claude(compat=ModelCompat(supports_mid_convo_effort=True)), options)
    assert "temperature" not in body
    # The catalogue says so of the newest models, as pi-ai 1.6.0's does.
    fable = get_model("anthropic", "claude-fable-5-1")
    assert fable.compat is not None and fable.compat.supports_mid_convo_effort
    assert request_of(claude(), options)[1]["temperature"] == 0.3


def test_long_retention_follows_compat() -> None:
    options = StreamOptions(api_key="k", cache_retention="long")
    proxied = claude(base_url="https://gateway.example")
    _, body = request_of(proxied, options)
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    _, body = request_of(
        Model("claude-sonnet-4-5", api="anthropic-messages", base_url="https://gateway.example",
              compat=ModelCompat(supports_long_cache_retention=True)),
        options,
    )  # fmt: skip
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


async def test_the_served_request_carries_the_beta_and_adaptive_settings(
    anyio_backend: str,
) -> None:
    ok = [
        sse_event({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}}),
        sse_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}),
        sse_event({"type": "message_stop"}),
    ]
    async with open_replay_server([Reply(200, ok), Reply(200, ok)], anyio_backend) as server:
        for compat in (None, ADAPTIVE):
            model = claude(base_url=server.base_url, compat=compat)
            options = StreamOptions(api_key="k", reasoning="high")
            assert final_message(await collect(anthropic.stream_anthropic(model, CONTEXT, options)))
        budget, adaptive = server.requests
    assert budget.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert budget.body["thinking"]["type"] == "enabled"
    assert "anthropic-beta" not in adaptive.headers
    assert adaptive.body["thinking"]["type"] == "adaptive"
    assert adaptive.body["output_config"] == {"effort": "high"}
