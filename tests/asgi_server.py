"""An ASGI app served by hypercorn on 127.0.0.1 for the length of a test, on its anyio backend."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from hypercorn.config import Config

__all__ = ["App", "RequestsInFlight", "serve_on_localhost"]

App = Callable[[Any, Any, Any], Awaitable[None]]


class RequestsInFlight:
    """Counts the HTTP requests an app is serving; ``on_return`` is called as each one returns,
    so that a test can tell when the server has nothing left running."""

    def __init__(self, on_return: Callable[[], None]) -> None:
        self.count = 0
        self._on_return = on_return

    def counting(self, app: App) -> App:
        """``app``, counted."""

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            http = scope["type"] == "http"
            self.count += http
            try:
                await app(scope, receive, send)
            finally:
                self.count -= http
                self._on_return()

        return counted


@asynccontextmanager
async def serve_on_localhost(app: App, backend: str) -> AsyncIterator[str]:
    """Serve ``app`` on a free port of 127.0.0.1 with hypercorn on ``backend`` ("asyncio" or
    "trio"); yields its URL, ``http://127.0.0.1:<port>``. On exit the server shuts down.

    The socket listens before the server task starts, so a client may connect at once.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    config = Config()
    config.bind = [f"fd://{os.dup(listener.fileno())}"]  # hypercorn owns (and closes) the dup
    listener.close()
    config.graceful_timeout = 1.0
    stop = anyio.Event()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(_serve, app, config, stop.wait, backend)
        try:
            yield url
        finally:
            stop.set()


async def _serve(
    app: App, config: Config, stop: Callable[[], Awaitable[None]], backend: str
) -> None:
    if backend == "trio":
        from hypercorn.trio import serve as serve_trio

        await serve_trio(app, config, shutdown_trigger=stop)
    else:
        from hypercorn.asyncio import serve as serve_asyncio

        await serve_asyncio(app, config, shutdown_trigger=stop)
