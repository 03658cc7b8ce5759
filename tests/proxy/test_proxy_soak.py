"""Soak and faults, in counts: many concurrent streams through a real proxy server, with random
aborts and disconnects. Every stream completes or ends cleanly cancelled, every model call the
server started is closed, no request is left running. (Timings are in ``python -m bench.soak``.)"""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing

import anyio
import httpx
import pytest
from _proxy_support import check_protocol, serve_app

from asgi_server import RequestsInFlight
from pi_core import (
    AbortController,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamDone,
    StreamError,
    StreamOptions,
    UserMessage,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.proxy import create_proxy_app, stream_proxy

pytestmark = pytest.mark.anyio

TOKEN = "soak-token"
CLIENTS = 150
REPLY = "word " * 40
CONTEXT = Context(None, [UserMessage("go", timestamp=1)], [])


class Ledger:
    """What the server side saw: model calls started and closed, requests in flight."""

    def __init__(self) -> None:
        self.started = 0
        self.closed = 0
        self.cut_short = 0
        self.requests = RequestsInFlight(self._check_settled)
        self.settled = anyio.Event()

    def stream_fn(self) -> Callable[..., AsyncIterator[AssistantMessageEvent]]:
        async def stream(
            model: Model, context: Context, options: StreamOptions
        ) -> AsyncIterator[AssistantMessageEvent]:
            provider = FauxProvider(seed=self.started, token_size=(1, 1))
            provider.set_responses([faux_assistant_message(REPLY)])
            self.started += 1
            finished = False
            events = provider.stream(model, context, options)
            assert isinstance(events, AsyncGenerator)
            try:
                async with aclosing(events):
                    async for event in events:
                        finished = event.type == "done"  # the server closes the stream after it
                        yield event
            finally:
                self.closed += 1
                self.cut_short += not finished
                self._check_settled()

        return stream

    def _check_settled(self) -> None:
        if self.started and self.closed == self.started and not self.requests.count:
            self.settled.set()


async def one_client(
    number: int, url: str, http: httpx.AsyncClient, outcomes: dict[str, int]
) -> None:
    """Stream one reply: to the end, or aborted, or dropped after a random number of events."""
    rng = random.Random(number)
    fate = rng.choice(("complete", "abort", "disconnect"))
    cut_at = rng.randrange(1, 30)
    controller = AbortController()
    model = Model("m", api="faux", provider="faux")
    options = StreamOptions(signal=controller.signal)
    events: list[AssistantMessageEvent] = []
    with anyio.CancelScope() as scope:
        stream = stream_proxy(model, CONTEXT, options, proxy_url=url, auth_token=TOKEN, client=http)
        async for event in stream:
            events.append(event)
            if len(events) == cut_at and fate == "abort":
                controller.abort()
            elif len(events) == cut_at and fate == "disconnect":
                scope.cancel()  # the client goes away mid-stream
    if scope.cancelled_caught:
        outcomes["disconnected"] += 1
        return
    check_protocol(events)
    last = events[-1]
    if isinstance(last, StreamDone):
        assert isinstance(last.message, AssistantMessage)
        assert last.message.content[0].text == REPLY  # type: ignore[union-attr]
        outcomes["completed"] += 1
    else:
        assert isinstance(last, StreamError)
        assert last.reason == "aborted", last.error.error_message
        outcomes["aborted"] += 1


async def test_many_concurrent_streams_with_aborts_and_disconnects(anyio_backend: str) -> None:
    ledger = Ledger()
    app = ledger.requests.counting(create_proxy_app(ledger.stream_fn(), auth_token=TOKEN))
    outcomes = {"completed": 0, "aborted": 0, "disconnected": 0}
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with serve_app(app, anyio_backend) as url:
        async with httpx.AsyncClient(limits=limits, timeout=30) as http:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as clients:
                    for number in range(CLIENTS):
                        clients.start_soon(one_client, number, url, http, outcomes)
        with anyio.fail_after(30):
            await ledger.settled.wait()  # the server closed every call it started
    assert sum(outcomes.values()) == CLIENTS
    assert all(count > 0 for count in outcomes.values()), outcomes
    assert ledger.started == ledger.closed == CLIENTS
    assert ledger.requests.count == 0
    # Every call a client cut short (an abort closes the connection too) was cut short upstream.
    assert ledger.cut_short >= outcomes["disconnected"]
    assert ledger.cut_short <= outcomes["disconnected"] + outcomes["aborted"]
