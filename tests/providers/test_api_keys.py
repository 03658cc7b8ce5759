"""A missing API key, alike for every HTTP provider: raised before any request, and the run's
failed reply when the loop calls the provider."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from pi_core import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    ProviderError,
    StreamOptions,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers import anthropic, google, openai, openai_responses

pytestmark = pytest.mark.anyio

ProviderStream = Callable[
    [Model, Context, StreamOptions | None], AsyncIterator[AssistantMessageEvent]
]
"""What every provider's ``stream_*`` function is: ``options`` may be left out."""

PROVIDERS = [
    pytest.param(openai.stream_openai, openai.API, "openai", "OPENAI_API_KEY", id="openai"),
    pytest.param(anthropic.stream_anthropic, anthropic.API, "anthropic", "ANTHROPIC_API_KEY", id="anthropic"),
    pytest.param(openai_responses.stream_openai_responses, openai_responses.API, "openai", "OPENAI_API_KEY", id="openai_responses"),
    pytest.param(google.stream_google, google.API, "google", "GEMINI_API_KEY", id="google"),
]  # fmt: skip
CONTEXT = Context("Be brief.", [UserMessage("Hi")])


def model(api: str, provider: str) -> Model:
    return Model("m-test", api=api, provider=provider, base_url="https://llm.example/v1")


@pytest.mark.parametrize(("stream", "api", "provider", "env"), PROVIDERS)
@pytest.mark.parametrize("options", [None, StreamOptions()], ids=["no-options", "no-key"])
async def test_a_missing_api_key_raises_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
    stream: ProviderStream,
    api: str,
    provider: str,
    env: str,
    options: StreamOptions | None,
) -> None:
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ProviderError, match=f"or set {env}"):
        stream(model(api, provider), CONTEXT, options)


@pytest.mark.parametrize(("stream", "api", "provider", "env"), PROVIDERS)
async def test_a_missing_api_key_is_the_run_s_failed_reply(
    monkeypatch: pytest.MonkeyPatch, stream: ProviderStream, api: str, provider: str, env: str
) -> None:
    monkeypatch.delenv(env, raising=False)
    config = AgentLoopConfig(model(api, provider), stream_fn=stream)
    new = await run_agent_loop([UserMessage("hi")], AgentContext(), config, lambda _event: None)
    reply = new[-1]
    assert isinstance(reply, AssistantMessage)
    assert (reply.stop_reason, reply.content) == ("error", [])
    assert reply.error_message == (
        f"No API key for provider {provider!r}: pass StreamOptions(api_key=...) or set {env}"
    )
