"""Reprs never show secrets: credential headers of models, options and provider requests, API
keys, the proxy's token; the rest of what they show stays."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from pi_core import AgentLoopConfig, Context, Model, StreamOptions, UserMessage
from pi_core._redact import is_secret_header, redact_credentials
from pi_core.providers._common import RequestSpec
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.proxy import ProxyStream, create_proxy_app

SECRETS = ("sk-live-123456789", "tok-abcdef", "cookie-value", "basic-secret", "azure-key")
HEADERS = {
    "Authorization": "Bearer sk-live-123456789",
    "x-api-key": "tok-abcdef",
    "Cookie": "cookie-value",
    "Proxy-Authorization": "basic-secret",
    "api-key": "azure-key",
    "X-Title": "my app",
    "anthropic-version": "2023-06-01",
}


def assert_redacted(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text
    assert "[redacted]" in text
    assert "my app" in text  # what is not a credential is still shown
    assert "2023-06-01" in text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("Authorization", True),
        ("x-api-key", True),
        ("api-key", True),
        ("Cookie", True),
        ("Set-Cookie", True),
        ("X-Goog-Api-Key", True),
        ("x-amz-security-token", True),
        ("X-Client-Secret", True),
        ("Content-Type", False),
        ("X-Title", False),
        ("anthropic-version", False),
    ],
)
def test_credential_headers_are_known_by_name(name: str, secret: bool) -> None:
    assert is_secret_header(name) is secret


def test_a_models_repr_redacts_its_credential_headers() -> None:
    model = Model("m", headers=HEADERS)
    assert_redacted(repr(model))
    assert model.headers == HEADERS  # the values themselves are untouched


def test_stream_options_repr_redacts_headers_and_the_api_key() -> None:
    options = StreamOptions(api_key="sk-live-123456789", headers=HEADERS)
    text = repr(options)
    assert_redacted(text)
    assert "api_key='[redacted]'" in text
    assert "api_key=None" in repr(StreamOptions())


def test_an_agent_loop_configs_repr_shows_no_secret() -> None:
    config = AgentLoopConfig(
        Model("m", headers=HEADERS),
        stream_fn=ProxyStream("https://proxy.test", "tok-abcdef"),
        options=StreamOptions(api_key="sk-live-123456789", headers=HEADERS),
    )
    assert_redacted(repr(config))


def test_a_provider_requests_repr_redacts_headers_and_keys_in_its_url() -> None:
    spec = RequestSpec(
        "https://generativelanguage.test/v1/models/m:stream?key=azure-key&alt=sse",
        dict(HEADERS),
        {"model": "m"},
    )
    text = repr(spec)
    assert_redacted(text)
    assert "alt=sse" in text


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("Illegal header value b'Bearer sk-live-123456789\\n'", "Illegal header value b'[redacted]'"),
        ("GET https://x.test/?key=abc&page=2", "GET https://x.test/?key=[redacted]&page=2"),
        ('{"api_key": "sk-live-123456789"}', '{"api_key": "[redacted]"}'),
        ("Authorization: Bearer abc.def", "Authorization: Bearer [redacted]"),
        ("leaked sk-live-123456789 here", "leaked [redacted] here"),
        ("400 Bad Request: max_tokens: 100000 > 4096", "400 Bad Request: max_tokens: 100000 > 4096"),
    ],
)  # fmt: skip
def test_credentials_in_text_are_redacted(text: str, redacted: str) -> None:
    assert redact_credentials(text) == redacted


def test_a_proxy_streams_repr_shows_the_url_and_never_the_token() -> None:
    stream_fn = ProxyStream("https://proxy.test", "tok-abcdef")
    assert repr(stream_fn) == "ProxyStream(proxy_url='https://proxy.test', auth_token='[redacted]')"


@pytest.mark.anyio
async def test_a_proxy_stream_is_a_stream_function_of_that_proxy() -> None:
    provider = FauxProvider(seed=1)
    provider.set_responses([faux_assistant_message("through the proxy")])
    app = create_proxy_app(provider.stream, auth_token="tok-abcdef")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport) as client:
        stream_fn = ProxyStream("http://proxy.test", "tok-abcdef", client=client)
        events: list[Any] = []
        with anyio.fail_after(10):
            async for event in stream_fn(
                provider.models[0], Context(None, [UserMessage("hi")], []), StreamOptions()
            ):
                events.append(event)
    assert events[-1].type == "done"
    assert events[-1].message.content[0].text == "through the proxy"
