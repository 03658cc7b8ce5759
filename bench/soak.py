"""``python -m bench.soak``: many concurrent streams through a real proxy server, with faults.

A hypercorn server on 127.0.0.1 serves :func:`pi_core.proxy.create_proxy_app` over a faux model
that streams a 200-delta reply; C clients stream through it at once with
:func:`pi_core.proxy.stream_proxy`. A share of them (``--cut``) drop their stream after a few
events. Printed per backend and client count: the wall time of the whole round, streams per
second, and how long after the last client finished the server had closed every model call
(the disconnect-to-cancel latency, at its worst). The tests hold the counts (tests/proxy/
test_proxy_soak.py); this measures the time.

    python -m bench.soak                              # C = 100 and 500, both backends
    python -m bench.soak --clients 1000 --cut 0.5 --backend trio
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import httpx
from hypercorn.config import Config

from pi_core import AssistantMessageEvent, Context, Model, StreamOptions, UserMessage
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.proxy import create_proxy_app, stream_proxy

__all__ = ["main", "soak"]

TOKEN = "bench-token"
REPLY = "word " * 200
MODEL = Model("m", api="faux", provider="faux")
CONTEXT = Context(None, [UserMessage("go", timestamp=1)], [])


class _Server:
    """The served stream function, counting the model calls still open."""

    def __init__(self) -> None:
        self.open = 0
        self.all_closed = anyio.Event()

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        provider = FauxProvider(token_size=(1, 1))
        provider.set_responses([faux_assistant_message(REPLY)])
        self.open += 1
        try:
            async with aclosing(provider.stream(model, context, options)) as events:  # type: ignore[type-var]
                async for event in events:
                    yield event
        finally:
            self.open -= 1
            if not self.open:
                self.all_closed.set()


async def _client(url: str, http: httpx.AsyncClient, cut_at: int | None) -> None:
    count = 0
    with anyio.CancelScope() as scope:
        stream = stream_proxy(
            MODEL, CONTEXT, StreamOptions(), proxy_url=url, auth_token=TOKEN, client=http
        )
        async for _ in stream:
            count += 1
            if count == cut_at:
                scope.cancel()


async def soak(clients: int, cut: float, backend: str) -> dict[str, Any]:
    """One round; returns its JSON line."""
    from hypercorn.asyncio import serve as serve_asyncio
    from hypercorn.trio import serve as serve_trio

    server = _Server()
    app = create_proxy_app(server.stream, auth_token=TOKEN)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    config = Config()
    config.bind = [f"fd://{os.dup(listener.fileno())}"]
    config.backlog = 2048
    listener.close()
    rng = random.Random(clients)
    stop = anyio.Event()
    serve = serve_trio if backend == "trio" else serve_asyncio
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: serve(app, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
        async with httpx.AsyncClient(limits=limits, timeout=120) as http:
            with anyio.fail_after(30):
                while True:  # until the server answers (a 404)
                    try:
                        await http.get(f"{url}/ready")
                        break
                    except httpx.ConnectError:
                        await anyio.sleep(0.01)
            start = time.perf_counter()
            async with anyio.create_task_group() as round_:
                for _ in range(clients):
                    cut_at = rng.randrange(1, 50) if rng.random() < cut else None
                    round_.start_soon(_client, url, http, cut_at)
            finished = time.perf_counter()
            with anyio.fail_after(60):
                await server.all_closed.wait()
            closed = time.perf_counter()
        stop.set()
    wall = finished - start
    return {
        "scenario": "soak",
        "params": {"clients": clients, "cut": cut, "backend": backend, "deltas": 200},
        "seconds": round(wall, 3),
        "streams_per_second": round(clients / wall, 1),
        "close_after_ms": round((closed - finished) * 1000, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak")
    parser.add_argument("--clients", type=int, action="append", help="default: 100 and 500")
    parser.add_argument("--cut", type=float, default=0.3, help="share of clients that drop")
    parser.add_argument("--backend", action="append", choices=("asyncio", "trio"))
    args = parser.parse_args(argv)
    rows = []
    for backend in args.backend or ["asyncio", "trio"]:
        for clients in args.clients or [100, 500]:
            row = anyio.run(soak, clients, args.cut, backend, backend=backend)
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("\n| backend | clients | cut | seconds | streams/s | all closed after (ms) |")
    print("|---|--:|--:|--:|--:|--:|")
    for row in rows:
        p = row["params"]
        print(
            f"| {p['backend']} | {p['clients']} | {p['cut']} | {row['seconds']} | "
            f"{row['streams_per_second']} | {row['close_after_ms']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
