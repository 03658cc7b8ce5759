"""A request that fails in the HTTP stack says where it went and what went wrong, never with the
stack's own text (which can quote a header, key and all); an error body is read up to one cap.
Everything here talks to real sockets on 127.0.0.1."""

from __future__ import annotations

import httpx
import pytest
from _replay_server import Reply, open_replay_server
from _stream_checks import collect, final_message, kinds

from pi_core import Context, Model, StreamOptions, UserMessage
from pi_core._http import MAX_ERROR_BODY, HttpCall, RequestGuard, http_failure_text
from pi_core.providers import anthropic, openai
from pi_core.proxy import stream_proxy

pytestmark = pytest.mark.anyio

CONTEXT = Context(None, [UserMessage("Hi")])
KEY = "sk-proj-Zq8Rw2Lx7Vn4Tb6Hc1Jd9Kf3Mg5Ps0Yy"


async def test_a_refused_connection_names_the_url_and_the_cause(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    model = Model("gpt-test", api="openai-completions", provider="openai", base_url=base_url)
    options = StreamOptions(api_key=KEY, max_retries=0)
    events = await collect(openai.stream_openai(model, CONTEXT, options))
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == (
        f"Connection error ({base_url}/chat/completions): Connection refused"
    )


async def test_every_provider_and_the_proxy_client_say_the_same(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}"
    model = Model("claude", api="anthropic-messages", provider="anthropic", base_url=base_url)
    options = StreamOptions(api_key=KEY, max_retries=0)
    events = await collect(anthropic.stream_anthropic(model, CONTEXT, options))
    assert final_message(events).error_message == (
        f"Connection error ({base_url}/v1/messages): Connection refused"
    )
    proxied = await collect(stream_proxy(model, CONTEXT, proxy_url=base_url, auth_token=KEY))
    assert final_message(proxied).error_message == (
        f"Proxy request failed: Connection error ({base_url}/api/stream): Connection refused"
    )


def test_the_url_is_shown_without_its_credentials_and_query() -> None:
    request = httpx.Request("POST", f"https://bob:{KEY}@api.test:8443/v1/models?key={KEY}#x")
    text = http_failure_text(
        httpx.ConnectError("Illegal header value b'Bearer sk-…'", request=request)
    )
    assert text == "Connection error (https://api.test:8443/v1/models): cannot connect"


def test_a_timeout_and_an_error_without_a_request_have_plain_texts() -> None:
    assert http_failure_text(httpx.ReadTimeout("read timed out")) == "Request timed out."
    assert http_failure_text(httpx.RemoteProtocolError("peer closed")) == (
        "Connection error: the server closed the connection or broke the HTTP protocol"
    )


async def test_an_error_body_is_read_up_to_the_cap(anyio_backend: str) -> None:
    body = (b"x" * 4096 for _ in range(256))  # 1 MiB, sent in pieces
    async with open_replay_server(
        [Reply(500, body, content_type="text/plain")], anyio_backend
    ) as server:
        call = HttpCall(RequestGuard(None, None), None)
        try:
            response = await call.send(server.base_url + "/v1", {}, b"{}")
            assert response.status_code == 500
            assert await call.read_error_body() == b"x" * MAX_ERROR_BODY
        finally:
            await call.close()
