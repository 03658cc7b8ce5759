"""Retries of the HTTP providers: which failures, how long to wait, and when never.

The wait between attempts is injected (``pi_core._http._sleep``): each test sees every delay the
provider asked for and decides when (or whether) the wait ends, so nothing here sleeps.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from _replay_server import Reply, open_replay_server, sse_event
from _stream_checks import collect, final_message, kinds

from pi_core import AbortController, Context, Model, StreamOptions, UserMessage
from pi_core import _http as http
from pi_core.providers import anthropic, openai

pytestmark = pytest.mark.anyio

CONTEXT = Context(None, [UserMessage("Hi")])
OPENAI_OK = [
    sse_event({"id": "c1", "choices": [{"index": 0, "delta": {"content": "Hello"}}]}),
    sse_event({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    sse_event("[DONE]"),
]


def openai_model(base_url: str) -> Model:
    return Model("gpt-test", api="openai-completions", provider="openai", base_url=base_url + "/v1")


def error(status: int, headers: dict[str, str] | None = None, text: str = "busy") -> Reply:
    body = json.dumps({"error": {"message": text}}).encode()
    return Reply(status, [body], content_type="application/json", headers=headers or {})


class Waits:
    """The injected sleep: records each delay and returns at once (after a checkpoint)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await anyio.lowlevel.checkpoint()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Waits:
    recorder = Waits()
    monkeypatch.setattr(http, "_sleep", recorder)
    monkeypatch.setattr(http, "_random", lambda: 0.5)  # jitter in the middle of its range
    return recorder


async def stream_openai(
    replies: list[Reply], backend: str, options: StreamOptions | None = None
) -> tuple[list[Any], int]:
    async with open_replay_server(replies, backend) as server:
        opts = options or StreamOptions(api_key="sk-test")
        events = await collect(openai.stream_openai(openai_model(server.base_url), CONTEXT, opts))
        return events, len(server.requests)


# --- what is retried, and how long it waits ------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
async def test_retryable_statuses_are_retried_with_backoff(
    anyio_backend: str, waits: Waits, status: int
) -> None:
    events, requests = await stream_openai(
        [error(status), error(status), Reply(200, OPENAI_OK)], anyio_backend
    )
    assert kinds(events)[0] == "start" and final_message(events).stop_reason == "stop"
    assert requests == 3
    assert waits.delays == [0.5 * 0.875, 1.0 * 0.875]  # 0.5 s, 1 s, less 12.5 % jitter


async def test_retries_give_up_after_max_retries(anyio_backend: str, waits: Waits) -> None:
    replies = [error(503, text=f"busy {n}") for n in range(4)]
    events, requests = await stream_openai(replies, anyio_backend)
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == "503 Service Unavailable: busy 2"
    assert requests == 3 and len(waits.delays) == 2


async def test_max_retries_zero_sends_once(anyio_backend: str, waits: Waits) -> None:
    options = StreamOptions(api_key="sk-test", max_retries=0)
    events, requests = await stream_openai(
        [error(429), Reply(200, OPENAI_OK)], anyio_backend, options
    )
    assert kinds(events) == ["error"] and requests == 1 and waits.delays == []


@pytest.mark.parametrize(
    ("headers", "delay"),
    [({"retry-after-ms": "1500"}, 1.5), ({"retry-after": "7"}, 7.0),
     ({"retry-after-ms": "250", "retry-after": "9"}, 0.25), ({"retry-after": "soon"}, 0.4375)],
)  # fmt: skip
async def test_the_servers_retry_after_is_honoured(
    anyio_backend: str, waits: Waits, headers: dict[str, str], delay: float
) -> None:
    events, requests = await stream_openai(
        [error(429, headers), Reply(200, OPENAI_OK)], anyio_backend
    )
    assert final_message(events).stop_reason == "stop" and requests == 2
    assert waits.delays == [delay]


async def test_a_retry_after_beyond_max_retry_delay_returns_the_error_at_once(
    anyio_backend: str, waits: Waits
) -> None:
    options = StreamOptions(api_key="sk-test", max_retry_delay=30)
    replies = [error(429, {"retry-after": "120"}, "slow down"), Reply(200, OPENAI_OK)]
    events, requests = await stream_openai(replies, anyio_backend, options)
    assert requests == 1 and waits.delays == []
    assert final_message(events).error_message == (
        "429 Too Many Requests: slow down (the server asked to retry after 120 s, "
        "longer than max_retry_delay (30 s))"
    )


async def test_x_should_retry_overrides_the_status(anyio_backend: str, waits: Waits) -> None:
    replies = [error(503, {"x-should-retry": "false"}), Reply(200, OPENAI_OK)]
    events, requests = await stream_openai(replies, anyio_backend)
    assert kinds(events) == ["error"] and requests == 1
    replies = [error(400, {"x-should-retry": "true"}), Reply(200, OPENAI_OK)]
    events, requests = await stream_openai(replies, anyio_backend)
    assert final_message(events).stop_reason == "stop" and requests == 2


async def test_client_errors_are_not_retried(anyio_backend: str, waits: Waits) -> None:
    for status in (400, 401, 403, 404, 422):
        events, requests = await stream_openai(
            [error(status), Reply(200, OPENAI_OK)], anyio_backend
        )
        assert kinds(events) == ["error"] and requests == 1
    assert waits.delays == []


async def test_nothing_is_retried_once_the_reply_streams(anyio_backend: str, waits: Waits) -> None:
    dropped = Reply(200, OPENAI_OK[:1], ending="drop")
    events, requests = await stream_openai([dropped, Reply(200, OPENAI_OK)], anyio_backend)
    assert kinds(events)[:3] == ["start", "text_start", "text_delta"]
    assert kinds(events)[-1] == "error" and requests == 1 and waits.delays == []


async def test_anthropic_overloaded_529_is_retried(anyio_backend: str, waits: Waits) -> None:
    ok = [
        sse_event({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1}}}),
        sse_event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        sse_event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        sse_event({"type": "content_block_stop", "index": 0}),
        sse_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        sse_event({"type": "message_stop"}),
    ]  # fmt: skip
    overloaded = json.dumps(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    replies = [Reply(529, [overloaded.encode()], content_type="application/json"), Reply(200, ok)]
    async with open_replay_server(replies, anyio_backend) as server:
        model = Model(
            "claude-test", api="anthropic-messages", provider="anthropic", base_url=server.base_url
        )
        events = await collect(
            anthropic.stream_anthropic(model, CONTEXT, StreamOptions(api_key="k"))
        )
        assert final_message(events).content[0].text == "Hi"  # type: ignore[union-attr]
        assert len(server.requests) == 2 and waits.delays == [0.4375]


# --- connection errors ---------------------------------------------------------------------------


@asynccontextmanager
async def open_flaky_server(drops: int, body: bytes) -> AsyncIterator[tuple[str, list[int]]]:
    """A raw TCP server on 127.0.0.1: the first ``drops`` connections are closed as soon as the
    request arrives (no response at all); later ones get ``body`` as an event stream."""
    seen: list[int] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")

    async def serve(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            seen.append(len(seen))
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive()
            if len(seen) <= drops:
                return
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
            await stream.send(head + b"content-length: %d\r\n\r\n" % len(body) + body)

    async with listener, anyio.create_task_group() as task_group:
        task_group.start_soon(listener.serve, serve)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        try:
            yield f"http://127.0.0.1:{port}", seen
        finally:
            task_group.cancel_scope.cancel()


async def test_a_dropped_connection_before_the_response_is_retried(waits: Waits) -> None:
    async with open_flaky_server(2, b"".join(OPENAI_OK)) as (url, seen):
        options = StreamOptions(api_key="sk-test")
        events = await collect(openai.stream_openai(openai_model(url), CONTEXT, options))
    assert final_message(events).stop_reason == "stop"
    assert len(seen) == 3 and waits.delays == [0.4375, 0.875]


async def test_connection_errors_end_in_a_plain_error_after_the_retries(waits: Waits) -> None:
    async with open_flaky_server(5, b"") as (url, seen):
        events = await collect(
            openai.stream_openai(openai_model(url), CONTEXT, StreamOptions(api_key="k"))
        )
    assert kinds(events) == ["error"] and len(seen) == 3
    assert final_message(events).error_message == (
        f"Connection error ({openai_model(url).base_url}/chat/completions): the server closed the connection or broke the HTTP protocol"
    )


# --- abort and deadline during the wait ------------------------------------------------------------


async def test_an_abort_ends_the_wait_at_once(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = anyio.Event()

    async def wait_forever(delay: float) -> None:
        waiting.set()
        await anyio.sleep(math.inf)

    monkeypatch.setattr(http, "_sleep", wait_forever)
    controller = AbortController()
    options = StreamOptions(api_key="sk-test", signal=controller.signal)
    async with open_replay_server([error(503), Reply(200, OPENAI_OK)], anyio_backend) as server:
        stream = openai.stream_openai(openai_model(server.base_url), CONTEXT, options)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as task_group:
                collected: list[Any] = []

                async def consume() -> None:
                    collected.extend(await collect(stream))

                task_group.start_soon(consume)
                await waiting.wait()
                controller.abort()
        assert kinds(collected) == ["error"]
        assert final_message(collected).stop_reason == "aborted"
        assert len(server.requests) == 1


async def test_the_requests_timeout_bounds_the_waits(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    async def wait_forever(delay: float) -> None:
        waits.append(delay)
        await anyio.sleep(math.inf)

    monkeypatch.setattr(http, "_sleep", wait_forever)
    # Long enough for the first request to be answered on a loaded machine; the wait is endless.
    options = StreamOptions(api_key="sk-test", timeout=2.0)
    with anyio.fail_after(10):
        events, requests = await stream_openai(
            [error(503), Reply(200, OPENAI_OK)], anyio_backend, options
        )
    assert final_message(events).error_message == "Request timed out after 2 s"
    assert requests == 1
    assert len(waits) == 1


# --- the policy itself -----------------------------------------------------------------------------


def test_backoff_doubles_to_eight_seconds_with_jitter(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = http.RetryPolicy(10, 60)
    monkeypatch.setattr(http, "_random", lambda: 0.0)
    assert [policy.backoff(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    monkeypatch.setattr(http, "_random", lambda: 1.0)
    assert policy.backoff(0) == 0.375
    assert http.RetryPolicy(5, 0.3).backoff(3) == 0.3  # never beyond max_retry_delay


def test_retry_after_as_an_http_date() -> None:
    import email.utils
    import time

    import httpx

    when = email.utils.formatdate(time.time() + 3600, usegmt=True)
    asked = http.retry_after(httpx.Response(429, headers={"retry-after": when}))
    assert asked is not None and 3500 < asked <= 3600
