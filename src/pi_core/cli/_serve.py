"""``pi-core serve-proxy``: serve :func:`pi_core.proxy.create_proxy_app` with hypercorn.

The server streams for the OpenAI-compatible and Anthropic providers (keys from the server's
environment) and for the built-in demo model (api ``"pi-demo"``), so that
``pi-core run --provider proxy --base-url http://127.0.0.1:8787`` works with no key at all.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Literal

import attrs

from .. import Model, stream_simple
from ..lowlevel import BUILT_IN_PROVIDERS, install_hint
from ._demo import DEMO_API, DemoModel
from ._interrupt import stop_signals
from ._setup import UsageError

__all__ = [
    "DEFAULT_BACKLOG",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "GRACEFUL_TIMEOUT",
    "close_streamed_connections",
    "hypercorn_config",
    "hypercorn_serve",
    "proxy_token",
    "serve_proxy",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
DEFAULT_BACKLOG = 2048
"""Connections the kernel queues before the server accepts them (hypercorn's own default, 100,
drops connections when a thousand clients arrive at once)."""
_KEEP_ALIVE_TIMEOUT = 5.0
"""Seconds an idle connection stays open between requests."""
GRACEFUL_TIMEOUT = 10.0
"""Seconds the streams in flight get to finish after SIGINT / SIGTERM."""
_SERVED_APIS = frozenset({*BUILT_IN_PROVIDERS, DEMO_API})
"""pi_core's own providers (which stream_simple finds by api) and the demo model."""


def proxy_token(env_var: str) -> str:
    """The bearer token clients must send, read from ``env_var``.

    Raises:
        UsageError: the variable is unset or empty: a proxy without a token would let anyone
            spend the server's API keys, so it is never started.
    """
    token = os.environ.get(env_var)
    if not token:
        raise UsageError(
            f"refusing to serve without a token: set the environment variable {env_var} "
            "(or name another one with --token-env)"
        )
    return token


async def serve_proxy(
    host: str,
    port: int,
    token: str,
    backend: Literal["asyncio", "trio"] = "asyncio",
    backlog: int = DEFAULT_BACKLOG,
) -> None:
    """Serve until SIGINT or SIGTERM, then shut down gracefully.

    A client has :data:`pi_core.proxy.DEFAULT_BODY_TIMEOUT` seconds to send its request body;
    hypercorn puts no read timeout on connections, since a client reading a long reply sends
    nothing for as long as the model writes.

    Raises:
        UsageError: hypercorn or :mod:`pi_core.proxy` is not installed.
    """
    app = _make_app(token)
    config = hypercorn_config(host, port, backlog)
    serve = hypercorn_serve(backend)
    with stop_signals() as stopped:
        # From here Ctrl-C stops gracefully. hypercorn logs the address once bound (the real
        # port, when asked for port 0).
        print(
            "pi-core proxy: POST /api/stream with the bearer token; Ctrl-C stops", file=sys.stderr
        )
        await serve(app, config, shutdown_trigger=stopped)


def _make_app(token: str) -> Any:
    try:
        from ..proxy import create_proxy_app
    except ImportError:
        raise UsageError("serve-proxy needs pi_core.proxy, which is not available") from None
    DemoModel().register()
    return create_proxy_app(stream_fn=stream_simple, auth_token=token, resolve_model=_pin_model)


def _pin_model(model: Model) -> Model | None:
    """Serve pi_core's own providers and the demo only, each at its provider's own URL.

    The server holds the API keys: a base URL chosen by the client could send them elsewhere.
    """
    if model.api not in _SERVED_APIS:
        return None
    return attrs.evolve(model, base_url="")


def hypercorn_config(host: str, port: int, backlog: int = DEFAULT_BACKLOG) -> Any:
    """The hypercorn configuration of ``serve-proxy``."""
    try:
        from hypercorn.config import Config
    except ImportError:
        raise UsageError(f"serve-proxy needs hypercorn: {install_hint('server')}") from None
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.backlog = backlog
    config.keep_alive_timeout = _KEEP_ALIVE_TIMEOUT
    config.graceful_timeout = GRACEFUL_TIMEOUT
    return config


def hypercorn_serve(backend: str) -> Any:
    """hypercorn's ``serve`` for ``backend``, serving the app with streamed responses closing
    their connections (:func:`close_streamed_connections`)."""
    if backend == "trio":
        from hypercorn.trio import serve
    else:
        from hypercorn.asyncio import serve  # type: ignore[assignment]

    async def serve_app(app: Any, config: Any, *, shutdown_trigger: Any) -> None:
        await serve(close_streamed_connections(app), config, shutdown_trigger=shutdown_trigger)

    return serve_app


def close_streamed_connections(app: Any) -> Any:
    """``app`` with every streamed HTTP/1.1 response (one without a length) ending its connection.

    A streamed response is a whole run, so the next request opening a new connection costs
    nothing. Without this, hypercorn on trio keeps a browser's connection that carried a stream
    open after it, and Ctrl-C then waits the whole graceful timeout for it to close.
    """

    async def closing_app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("http_version") != "1.1":
            await app(scope, receive, send)
            return

        async def send_closing(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if not any(name.lower() == b"content-length" for name, _ in headers):
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await app(scope, receive, send_closing)

    return closing_app
