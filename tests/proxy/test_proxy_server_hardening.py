"""The proxy server against hostile or careless clients and leaky errors: body limits and
deadlines, numbers and shapes it refuses, its own token, secrets in error texts, opt-in CORS."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator, MutableMapping, Sequence
from typing import Any

import anyio
import httpx
import pytest
from _proxy_support import serve_app

from pi_core import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamError,
    StreamOptions,
    StreamStart,
    TextContent,
    UserMessage,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.proxy import ProxyApp, ProxyStream, create_proxy_app

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
MODEL = '{"id": "m", "api": "faux", "provider": "faux"}'
USER = '{"role": "user", "content": "hi", "timestamp": 1}'


def body(messages: str = f"[{USER}]", options: str = "{}", model: str = MODEL) -> bytes:
    return (
        f'{{"model": {model}, "context": {{"systemPrompt": "s", "messages": {messages}}}, '
        f'"options": {options}}}'
    ).encode()


class Served:
    """A stream function answering "ok" that keeps what it was called with."""

    def __init__(self) -> None:
        self.contexts: list[Context] = []

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.contexts.append(context)
        provider = FauxProvider(seed=1)
        provider.set_responses([faux_assistant_message("ok")])
        return aiter(provider.stream(model, context, options))


async def post(
    app: ProxyApp, content: bytes, headers: dict[str, str] | None = None
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        with anyio.fail_after(30):
            return await client.post("/api/stream", content=content, headers=headers or AUTH)


def last_line(response: httpx.Response) -> dict[str, Any]:
    lines = [line for line in response.text.split("\n\n") if line]
    payload: dict[str, Any] = json.loads(lines[-1].removeprefix("data: "))
    return payload


# --- numbers, shapes and text ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "status", "error"),
    [
        (body(options='{"temperature": NaN}'), 400, "Malformed JSON in request body: NaN is not a JSON number"),
        (body(options='{"temperature": -Infinity}'), 400, "Malformed JSON in request body: -Infinity is not a JSON number"),
        (body(options='{"temperature": 1e999}'), 400, "Malformed JSON in request body: number out of range: 1e999"),
        (body(messages="{}"), 422, "Invalid request body: expected a list, got {} @ $.context.messages"),
        (body(messages='"hello"'), 422, "Invalid request body: expected a list, got 'hello' @ $.context.messages"),
        (
            body(options='{"maxTokens": 1000000000000000000000000}'),
            422,
            "Invalid request body: expected an integer from 1 to 10000000, got 1000000000000000000000000 @ $.options.maxTokens",
        ),
        (
            body(options='{"maxTokens": 0, "thinkingBudgets": {"high": -1}}'),
            422,
            "Invalid request body: expected an integer from 1 to 10000000, got 0 @ $.options.maxTokens; expected an integer from 0 to 10000000, got -1 @ $.options.thinkingBudgets.high",
        ),
        (
            body(model='{"id": "m", "api": "faux", "provider": "faux", "maxTokens": 99999999999}'),
            422,
            "Invalid request body: expected an integer from 0 to 10000000, got 99999999999 @ $.model.maxTokens",
        ),
        (b"[" * 100_000, 400, "Malformed JSON in request body: nested too deeply"),
    ],
)  # fmt: skip
async def test_refused_input_gets_a_clear_4xx(content: bytes, status: int, error: str) -> None:
    served = Served()
    response = await post(create_proxy_app(served, auth_token=TOKEN), content)
    assert (response.status_code, response.json()) == (status, {"error": error})
    assert served.contexts == []


async def test_a_lone_surrogate_escape_is_accepted_as_json_parse_does() -> None:
    served = Served()
    content = body(messages='[{"role": "user", "content": "broken \\ud83d paste", "timestamp": 1}]')
    response = await post(create_proxy_app(served, auth_token=TOKEN), content)
    assert response.status_code == 200
    assert last_line(response)["type"] == "done"
    [context] = served.contexts
    assert context.messages[1:] == [UserMessage("broken \ud83d paste", timestamp=1)]


# --- the body's size, values and time -------------------------------------------------------------


async def test_a_body_of_many_small_objects_is_refused_before_it_is_parsed() -> None:
    served = Served()
    many = ",".join(['{"a":1}'] * 3_750_000)  # 30 MB: about 800 MB of Python objects parsed
    content = body(options=f'{{"metadata": {{"x": [{many}]}}}}')
    assert len(content) > 30_000_000
    app = create_proxy_app(served, auth_token=TOKEN)
    tracemalloc.start()
    try:
        sent = await call_asgi(app, [{"type": "http.request", "body": content}])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"]) == {
        "error": "Request body has too many JSON values (limit 1000000)"
    }
    assert served.contexts == []
    assert peak < 4 * len(content)  # the body and its copies, not the objects it describes


async def test_the_json_value_limit_is_checked_as_the_chunks_arrive() -> None:
    served = Served()
    app = create_proxy_app(served, auth_token=TOKEN, max_json_items=10)
    messages = [{"type": "http.request", "body": b"[{},{},{},", "more_body": True}] * 3
    sent = await call_asgi(app, messages)
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"]) == {
        "error": "Request body has too many JSON values (limit 10)"
    }
    assert served.contexts == []


async def test_a_large_body_of_text_is_accepted() -> None:
    served = Served()
    text = json.dumps("{[a, b], [c, d]} " * 20_000)  # braces and commas inside a string
    content = body(messages=f'[{{"role": "user", "content": {text}, "timestamp": 1}}]')
    response = await post(create_proxy_app(served, auth_token=TOKEN), content)
    assert response.status_code == 200
    assert served.contexts[0].messages[1].content == json.loads(text)  # after the prompt


Message = MutableMapping[str, Any]


async def call_asgi(app: ProxyApp, requests: Sequence[Message]) -> list[Message]:
    """Call the app with ``requests`` as the body messages; then the client stalls for ever."""
    sent: list[Message] = []
    pending = list(requests)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/stream", "headers": [
        (b"authorization", f"Bearer {TOKEN}".encode())
    ]}  # fmt: skip
    with anyio.fail_after(10):
        await app(scope, receive, send)
    return sent


async def test_a_stalled_body_gets_408_at_its_deadline() -> None:
    served = Served()
    app = create_proxy_app(served, auth_token=TOKEN, body_timeout=0.05)
    sent = await call_asgi(app, [{"type": "http.request", "body": b'{"model"', "more_body": True}])
    assert sent[0]["status"] == 408
    assert json.loads(sent[1]["body"]) == {"error": "Request body not received within 0.05 s"}
    assert served.contexts == []


async def test_a_stalled_client_of_a_real_server_is_answered_and_let_go(
    anyio_backend: str,
) -> None:
    app = create_proxy_app(Served(), auth_token=TOKEN, body_timeout=0.2)
    async with serve_app(app, anyio_backend) as url:
        host, port = url.removeprefix("http://").split(":")
        with anyio.fail_after(10):
            stream = await anyio.connect_tcp(host, int(port))
            async with stream:
                await stream.send(
                    b"POST /api/stream HTTP/1.1\r\nHost: proxy\r\n"
                    + f"Authorization: Bearer {TOKEN}\r\n".encode()
                    + b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                    + b'{"model": '
                )
                answer = b""
                while b"Request body not received" not in answer:
                    answer += await stream.receive()
    assert answer.startswith(b"HTTP/1.1 408 ")


# --- the proxy's token and secrets in errors ------------------------------------------------------


async def test_the_proxys_own_token_is_read_without_surrounding_whitespace() -> None:
    app = create_proxy_app(Served(), auth_token=f"{TOKEN}\n")  # read from a file, newline kept
    response = await post(app, body())
    assert response.status_code == 200
    with pytest.raises(ValueError, match="must not be empty"):
        create_proxy_app(Served(), auth_token=" \n")


async def test_a_proxy_token_read_with_its_newline_works_on_both_sides(anyio_backend: str) -> None:
    app = create_proxy_app(Served(), auth_token=f"{TOKEN}\n")
    async with serve_app(app, anyio_backend) as url:  # a real server: h11 checks the header
        stream_fn = ProxyStream(url, f"{TOKEN}\n")
        with anyio.fail_after(10):
            events = [
                event
                async for event in stream_fn(
                    Model("m", api="faux", provider="faux"),
                    Context(None, [UserMessage("hi")], []),
                    StreamOptions(),
                )
            ]
    assert events[-1].type == "done"


def header_quoting_stream(url: str) -> Any:
    """A stream function that calls a server with a key read with its newline, as
    a provider would: the HTTP stack refuses the header and quotes it in its error."""

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield StreamStart(AssistantMessage([], model.api, model.provider, model.id))
        async with httpx.AsyncClient() as client:
            await client.get(f"{url}/ready", headers={"authorization": "Bearer sk-secret-9876\n"})

    return stream


async def test_an_http_stack_error_that_quotes_a_header_reaches_the_client_as_connection_error(
    anyio_backend: str,
) -> None:
    async with serve_app(create_proxy_app(Served(), auth_token=TOKEN), anyio_backend) as url:
        app = create_proxy_app(header_quoting_stream(url), auth_token=TOKEN)
        response = await post(app, body())
    assert (
        last_line(response)["errorMessage"]
        == f"Connection error ({url}/ready): a request header is not valid HTTP (such as a value with a line break)"
    )
    assert "sk-secret" not in response.text


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("Illegal header value b'Bearer sk-secret-9876\\n'", "Illegal header value b'[redacted]'"),
        ("401 for https://api.test/v1?key=AIzaSecret&x=1", "401 for https://api.test/v1?key=[redacted]&x=1"),
        ('upstream said {"api_key": "sk-secret-9876"}', 'upstream said {"api_key": "[redacted]"}'),
        ("Authorization: Bearer abc.def", "Authorization: Bearer [redacted]"),
        ("no such model", "no such model"),
    ],
)  # fmt: skip
async def test_credentials_in_error_texts_are_redacted(text: str, sent: str) -> None:
    async def raising(model: Model, context: Context, options: StreamOptions) -> Any:
        raise ValueError(text)

    async def erroring(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        failed = AssistantMessage([TextContent("")], model.api, model.provider, model.id)
        failed.stop_reason, failed.error_message = "error", text
        yield StreamError("error", failed)

    for stream_fn in (raising, erroring):
        response = await post(create_proxy_app(stream_fn, auth_token=TOKEN), body())
        assert last_line(response)["errorMessage"] == sent


# --- CORS -----------------------------------------------------------------------------------------

PREFLIGHT = {
    "origin": "https://app.example",
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization, content-type",
}


async def request(app: ProxyApp, method: str, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        with anyio.fail_after(10):
            content = body() if method == "POST" else None
            return await client.request(method, "/api/stream", headers=headers, content=content)


async def test_cors_is_off_by_default() -> None:
    app = create_proxy_app(Served(), auth_token=TOKEN)
    response = await request(app, "OPTIONS", PREFLIGHT)
    assert response.status_code == 405
    response = await request(app, "POST", {**AUTH, "origin": "https://app.example"})
    assert "access-control-allow-origin" not in response.headers


async def test_cors_origins_answer_preflights_and_mark_responses() -> None:
    app = create_proxy_app(Served(), auth_token=TOKEN, cors_origins=["https://app.example"])
    response = await request(app, "OPTIONS", PREFLIGHT)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "authorization" in response.headers["access-control-allow-headers"].lower()
    response = await request(app, "POST", {**AUTH, "origin": "https://app.example"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert last_line(response)["type"] == "done"
    refused = await request(app, "OPTIONS", {**PREFLIGHT, "origin": "https://evil.example"})
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_body_bytes must be positive"):
        create_proxy_app(Served(), auth_token=TOKEN, max_body_bytes=0)
    with pytest.raises(ValueError, match="max_json_items must be positive"):
        create_proxy_app(Served(), auth_token=TOKEN, max_json_items=0)
    with pytest.raises(ValueError, match="body_timeout must be positive"):
        create_proxy_app(Served(), auth_token=TOKEN, body_timeout=0)
