"""Reprs never show secrets: credential headers of models, options and provider requests, API
keys, the proxy's token; the rest of what they show stays."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

import anyio
import httpx
import pytest

from pi_core import (
    AgentLoopConfig,
    Context,
    Model,
    StreamError,
    StreamOptions,
    UserMessage,
    _redact,
)
from pi_core._redact import (
    MAX_REDACTED_CHARS,
    OFF_LOOP_CHARS,
    header_secrets,
    is_secret_header,
    redact_credentials,
    redact_credentials_off_loop,
)
from pi_core.providers._common import RequestSpec
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.proxy import ProxyStream, create_proxy_app

redact = redact_credentials  # the real one, for the recording stand-in below

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


# --- credentials in text: the common shapes --------------------------------------------------

OPAQUE = "Zq8Rw2Lx7Vn4Tb6Hc1Jd9Kf3Mg5Ps0Yy"
"""A token body of no particular shape (what follows a key's prefix)."""

SHAPES = {
    "OpenAI": f"sk-{OPAQUE}",
    "OpenAI project": f"sk-proj-{OPAQUE}_{OPAQUE}",
    "OpenAI service account": f"sk-svcacct-{OPAQUE}",
    "Anthropic": f"sk-ant-api03-{OPAQUE}-{OPAQUE}AA",
    "OpenRouter": f"sk-or-v1-{OPAQUE.lower()}",
    "Stripe": f"sk_live_{OPAQUE}",
    "Google": "AIzaSyD" + OPAQUE,
    "Groq": f"gsk_{OPAQUE}{OPAQUE}",
    "xAI": f"xai-{OPAQUE}{OPAQUE}",
    "Hugging Face": f"hf_{OPAQUE}",
    "GitHub classic": f"ghp_{OPAQUE}",
    "GitHub fine-grained": f"github_pat_11ABCDEFG0_{OPAQUE}",
    "GitLab": f"glpat-{OPAQUE[:20]}",
    "AWS access key": "AKIAIOSFODNN7EXAMPLE",
    "Slack": f"xoxb-123456789012-1234567890123-{OPAQUE}",
    "Replicate": f"r8_{OPAQUE}",
    "Perplexity": f"pplx-{OPAQUE}",
    "JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}
"""Keys and tokens recognised by their look wherever they are."""

IN_CONTEXT = [
    ("Authorization: Bearer " + OPAQUE, "Authorization: Bearer [redacted]"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [redacted]"),
    (f"postgres://app:{OPAQUE}@db.internal:5432/runs", "postgres://app:[redacted]@db.internal:5432/runs"),
    (f"GET https://x.test/v1/models?api_key={OPAQUE}&alt=sse", "GET https://x.test/v1/models?api_key=[redacted]&alt=sse"),
    (f"GET https://x.test/v1/models?access_token={OPAQUE}", "GET https://x.test/v1/models?access_token=[redacted]"),
    (f'{{"api_key": "{OPAQUE}", "model": "m"}}', '{"api_key": "[redacted]", "model": "m"}'),
    (f"x-api-key: {OPAQUE}", "x-api-key: [redacted]"),
    ("password=hunter2 user=bob", "password=[redacted] user=bob"),
    (f"aws_secret_access_key = {OPAQUE}/K7MDENG", "aws_secret_access_key = [redacted]"),
    (f"https://acct.blob.test/c?sv=2022&sig={OPAQUE}%3D", "https://acct.blob.test/c?sv=2022&sig=[redacted]"),
    (f"Illegal header value b'Bearer {OPAQUE}\\n'", "Illegal header value b'[redacted]'"),
]  # fmt: skip
"""Credentials recognised by what surrounds them: schemes, URLs, pairs, quoted header values."""


@pytest.mark.parametrize("key", SHAPES.values(), ids=SHAPES.keys())
def test_keys_of_every_common_shape_are_redacted(key: str) -> None:
    text = f"401 Unauthorized: Incorrect API key provided: {key}; check it ({key})"
    assert redact_credentials(text) == (
        "401 Unauthorized: Incorrect API key provided: [redacted]; check it ([redacted])"
    )


@pytest.mark.parametrize(("text", "redacted"), IN_CONTEXT)
def test_credentials_are_redacted_by_their_context(text: str, redacted: str) -> None:
    assert redact_credentials(text) == redacted


def test_twenty_five_shapes_are_covered() -> None:
    assert len(SHAPES) + len(IN_CONTEXT) >= 25


@pytest.mark.parametrize(
    "text",
    [
        "No API key for provider 'openai': pass StreamOptions(api_key=...) or set OPENAI_API_KEY",
        "Set PI_CORE_PROXY_TOKEN or pass --token",
        "export ANTHROPIC_API_KEY=... first",
        "400 Bad Request: max_tokens: 100000 > 4096 (input_tokens: 12)",
        "The model `gpt-5-mini` does not exist or you do not have access to it.",
        "Tool read_file timed out after 5 s; task-1234567890 failed; see https://docs.test/keys",
        "Bob's car isn't a 'key' question: token counts are 12",
    ],
)
def test_hints_and_ordinary_texts_survive_redaction_intact(text: str) -> None:
    assert redact_credentials(text) == text


def test_the_secrets_a_request_sent_are_redacted_whatever_they_look_like() -> None:
    headers = {
        "Authorization": "Bearer gateway-7f3a9c21",
        "x-org-token": "org-9x8y7z6w",
        "X-Title": "app",
    }
    text = "denied gateway-7f3a9c21 for org org-9x8y7z6w (app, k)"
    secrets = header_secrets(headers)
    assert redact_credentials(text, secrets) == "denied [redacted] for org [redacted] (app, k)"
    assert redact_credentials("k and app", ["k", "app"]) == "k and app"  # too short to be a key


def test_redaction_reads_a_bounded_length() -> None:
    text = "x" * (MAX_REDACTED_CHARS * 2)
    redacted = redact_credentials(text)
    assert len(redacted) == MAX_REDACTED_CHARS and redacted.endswith("…")


@pytest.mark.anyio
async def test_a_long_text_is_redacted_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []

    def recording(text: str, secrets: Collection[str] = ()) -> str:
        threads.append(threading.get_ident())
        return redact(text, secrets)

    monkeypatch.setattr(_redact, "redact_credentials", recording)
    short = await redact_credentials_off_loop(f"key={OPAQUE}")
    long = await redact_credentials_off_loop(f"key={OPAQUE} " + "x" * OFF_LOOP_CHARS)
    assert short == "key=[redacted]" and long.startswith("key=[redacted] xx")
    assert threads[0] == threading.get_ident() != threads[1]


@pytest.mark.anyio
async def test_the_proxy_server_redacts_a_long_error_text_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[int] = []

    def recording(text: str, secrets: Collection[str] = ()) -> str:
        threads.append(threading.get_ident())
        return redact(text, secrets)

    monkeypatch.setattr(_redact, "redact_credentials", recording)
    provider = FauxProvider(seed=1)
    failure = f"upstream says: key={OPAQUE} " + "x" * OFF_LOOP_CHARS
    provider.set_responses([faux_assistant_message([], "error", failure)])
    app = create_proxy_app(provider.stream, auth_token="tok-abcdef")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        stream_fn = ProxyStream("http://proxy.test", "tok-abcdef", client=client)
        with anyio.fail_after(10):
            events = [
                event
                async for event in stream_fn(
                    provider.models[0], Context(None, [UserMessage("hi")], []), StreamOptions()
                )
            ]
    last = events[-1]
    assert isinstance(last, StreamError)
    text = last.error.error_message or ""
    assert text.startswith("upstream says: key=[redacted] xxx") and OPAQUE not in text
    assert threads and threading.get_ident() not in threads
