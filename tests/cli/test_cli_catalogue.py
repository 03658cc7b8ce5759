"""``--model provider/id``: the CLI takes the model, its api and its key from the catalogue."""

from __future__ import annotations

import pytest

from pi_core.cli._setup import AgentSettings, connect
from pi_core.models import get_model
from pi_core.providers import anthropic, google, openai, openai_responses
from pi_core.providers._openai_compat import resolve_compat


def test_a_catalogue_model_comes_with_its_api_prices_and_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    connection = connect(AgentSettings(provider="catalogue", model="anthropic/claude-sonnet-4-5"))
    assert connection.model == get_model("anthropic", "claude-sonnet-4-5")
    assert connection.model.cost.output > 0
    assert connection.stream_fn is anthropic.stream_anthropic
    assert connection.options.api_key == "sk-ant-test"


def test_the_key_variable_follows_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    connection = connect(AgentSettings(provider="catalogue", model="groq/llama-3.3-70b-versatile"))
    assert connection.model.base_url.startswith("https://api.groq.com")
    assert connection.stream_fn is openai.stream_openai
    assert connection.options.api_key == "gsk-test"


def test_options_override_the_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "k")
    settings = AgentSettings(
        provider="catalogue",
        model="groq/llama-3.3-70b-versatile",
        base_url="http://127.0.0.1:9/v1",
        api="anthropic-messages",
        api_key_env="MY_KEY",
    )
    connection = connect(settings)
    assert connection.model.base_url == "http://127.0.0.1:9/v1"
    assert connection.model.api == "anthropic-messages"
    assert connection.stream_fn is anthropic.stream_anthropic


def test_a_provider_and_an_id_use_the_catalogue_when_it_knows_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    known = connect(AgentSettings(provider="anthropic", model="claude-sonnet-4-5"))
    assert known.model.context_window > 0
    # --provider openai speaks Chat Completions (as every compatible server does), whatever api
    # the catalogue gives the model; its prices still come from there.
    chat = connect(AgentSettings(provider="openai", model="gpt-5"))
    assert (chat.model.api, chat.stream_fn) == ("openai-completions", openai.stream_openai)
    assert chat.model.cost == get_model("openai", "gpt-5").cost
    unknown = connect(AgentSettings(provider="anthropic", model="my-fine-tune"))
    assert (unknown.model.api, unknown.model.provider) == ("anthropic-messages", "anthropic")
    assert unknown.model.cost.input == 0


def test_openai_models_of_the_catalogue_speak_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    connection = connect(AgentSettings(provider="catalogue", model="openai/gpt-5"))
    assert connection.model.api == "openai-responses"
    assert connection.stream_fn is openai_responses.stream_openai_responses


def test_google_models_use_the_gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test")
    connection = connect(AgentSettings(provider="catalogue", model="google/gemini-2.5-flash"))
    assert connection.stream_fn is google.stream_google
    assert connection.options.api_key == "gm-test"


@pytest.mark.parametrize(
    ("base_url", "provider", "null_content"),
    [
        ("http://127.0.0.1:8080/v1", "127.0.0.1", False),  # llama.cpp refuses a null content
        ("http://localhost:11434/v1", "localhost", False),  # Ollama
        ("https://api.openai.com/v1", "openai", True),
        ("https://api.groq.com/openai/v1", "api.groq.com", True),
    ],
)
def test_provider_openai_at_another_address_speaks_that_servers_dialect(
    monkeypatch: pytest.MonkeyPatch, base_url: str, provider: str, null_content: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # the key still comes from OpenAI's variable
    settings = AgentSettings(provider="openai", model="qwen2.5", base_url=base_url)
    connection = connect(settings)
    assert connection.model.provider == provider
    assert connection.options.api_key == "k"
    compat = resolve_compat(connection.model)
    assert compat.requires_non_null_assistant_content is not null_content
    assert compat.supports_developer_role is (provider == "openai")
