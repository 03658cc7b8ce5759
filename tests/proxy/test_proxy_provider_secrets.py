"""A provider behind the proxy server fails on its own API key: the client hears
``Connection error (<url>): <cause>`` and never the key (the HTTP stack's text quotes the refused header)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _proxy_support import collect, final_message, serve_app

from pi_core import AssistantMessageEvent, Context, Model, StreamOptions, UserMessage
from pi_core.providers import openai
from pi_core.proxy import create_proxy_app, stream_proxy

pytestmark = pytest.mark.anyio

SECRET = "sk-secret-0123456789"
BROKEN = f"{SECRET[:8]}\n{SECRET[8:]}"  # a newline inside the key: no header may carry it


async def test_the_proxy_client_never_sees_the_servers_key(anyio_backend: str) -> None:
    upstream_requests: list[Any] = []

    async def upstream(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        upstream_requests.append(scope["path"])
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def with_server_key(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        keyed = StreamOptions(api_key=BROKEN, signal=options.signal)
        return openai.stream_openai(model, context, keyed)

    app = create_proxy_app(with_server_key, auth_token="proxy-token")
    async with serve_app(upstream, anyio_backend) as upstream_url:
        upstream_requests.clear()  # serve_app's own readiness probe
        async with serve_app(app, anyio_backend) as proxy_url:
            stream_fn = functools.partial(
                stream_proxy, proxy_url=proxy_url, auth_token="proxy-token"
            )
            target = Model("gpt-test", api="openai-completions", base_url=upstream_url + "/v1")
            events = await collect(stream_fn(target, Context(None, [UserMessage("Hi")])))
    assert final_message(events).error_message == (
        f"Connection error ({upstream_url}/v1/chat/completions): a request header is not valid HTTP (such as a value with a line break)"
    )
    assert SECRET[8:] not in repr(events)
    assert upstream_requests == []  # the request never left: the header was refused
