"""API keys never leak into error texts: whitespace around a key is stripped, and a failure of
the HTTP stack (whose texts can quote a header) reads ``Connection error (<url>): <cause>`` (through the proxy
server too: tests/proxy/test_proxy_provider_secrets.py)."""

from __future__ import annotations

import pytest
from _replay_server import Reply, open_replay_server, sse_event
from _stream_checks import collect, final_message

from pi_core import Context, Model, StreamOptions, UserMessage
from pi_core.providers import anthropic, openai

pytestmark = pytest.mark.anyio

CONTEXT = Context(None, [UserMessage("Hi")])
OK = [
    sse_event({"id": "c1", "choices": [{"index": 0, "delta": {"content": "Hello"}}]}),
    sse_event({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    sse_event("[DONE]"),
]
SECRET = "sk-secret-0123456789"


def model(base_url: str) -> Model:
    return Model("gpt-test", api="openai-completions", provider="openai", base_url=base_url + "/v1")


async def test_a_key_read_with_its_newline_is_sent_without_it(anyio_backend: str) -> None:
    async with open_replay_server([Reply(200, OK)], anyio_backend) as server:
        options = StreamOptions(api_key=f"  {SECRET}\n")
        events = await collect(openai.stream_openai(model(server.base_url), CONTEXT, options))
        assert final_message(events).stop_reason == "stop"
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_a_key_from_the_environment_is_stripped_too(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"{SECRET}\r\n")
    async with open_replay_server([Reply(400, [b"{}"])], anyio_backend) as server:
        target = Model("claude", api="anthropic-messages", base_url=server.base_url)
        await collect(anthropic.stream_anthropic(target, CONTEXT, StreamOptions()))
        assert server.requests[0].headers["x-api-key"] == SECRET


async def test_a_header_the_http_stack_refuses_is_a_connection_error(anyio_backend: str) -> None:
    broken = f"{SECRET[:8]}\n{SECRET[8:]}"  # a newline inside: no stripping can save it
    async with open_replay_server([Reply(200, OK)], anyio_backend) as server:
        options = StreamOptions(api_key=broken)
        events = await collect(openai.stream_openai(model(server.base_url), CONTEXT, options))
        assert server.requests == []
    message = final_message(events)
    assert message.error_message == (
        f"Connection error ({server.base_url}/v1/chat/completions): a request header is not valid HTTP (such as a value with a line break)"
    )
    assert SECRET[8:] not in repr(message)
