"""``create_proxy_app``: the server side of the proxy protocol, as a plain ASGI application.

One route, ``POST /api/stream``: the Bearer token is checked, the JSON body validated, and the
events of the wrapped stream function are written as ``data: {json}`` lines (see :mod:`._wire`).
The provider call runs with the server's own abort signal and API keys; a client that goes away
cancels it. Nothing a client sends (headers, body, token) is ever logged.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from .. import Model, StreamError, stream_simple
from .._options import StreamFn, StreamOptions, close_stream, open_stream
from .._request_body import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_JSON_ITEMS,
    BodyLimits,
    Disconnected,
    Refused,
    read_body,
)
from .._texts import NO_TERMINAL_EVENT, install_hint
from ..nursery import AbortController
from ._errors import public_error_text, redact_event
from ._request import parse_request
from ._wire import ProxyRequest, WireEncoder

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_JSON_ITEMS",
    "ProxyApp",
    "create_proxy_app",
]

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
ModelResolver: TypeAlias = Callable[[Model], Model | None]

_log = logging.getLogger("pi_core.proxy")

_PATH = "/api/stream"
_CLIENT_GONE = "the proxy client disconnected"
_STREAM_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),  # stops nginx and the like from holding events back
    ],
}


def create_proxy_app(
    stream_fn: StreamFn = stream_simple,
    *,
    auth_token: str,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_json_items: int = DEFAULT_MAX_JSON_ITEMS,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    resolve_model: ModelResolver | None = None,
    cors_origins: Sequence[str] | None = None,
) -> ProxyApp:
    """An ASGI app serving upstream's proxy protocol for ``stream_fn``.

    Run it with any ASGI server (hypercorn on trio or asyncio, uvicorn). The provider behind
    ``stream_fn`` finds its API key where it always does (``OPENAI_API_KEY`` …); the client
    never sends one. To add one, wrap ``stream_fn`` and set ``options.api_key`` there.

    Args:
        stream_fn: the stream function to serve; by default every registered provider.
        auth_token: the Bearer token every request must carry (compared in constant time;
            surrounding whitespace, such as the newline of a token file, is ignored).
        max_body_bytes: a larger request body is refused with 413.
        max_json_items: a body with more JSON values is refused with 413 (counted as its
            ``{``, ``[`` and ``,`` bytes, before parsing: parsed, small values cost far more
            memory than their bytes).
        body_timeout: seconds a client has to send its whole body; then 408.
        resolve_model: maps the client's model to the one to call, or ``None`` to refuse it
            (403). The client's model is used as sent otherwise, ``base_url`` included: a
            server holding API keys should pin the base URL here, or a client could have the
            key sent to a host of its choice.
        cors_origins: the origins of browser apps allowed to call the proxy (``["*"]`` for
            any): CORS is then answered by Starlette's ``CORSMiddleware`` (the ``server``
            extra). ``None`` (the default) sends no CORS headers.

    Raises:
        ValueError: ``auth_token`` is empty, or a limit is not positive.
    """
    token = auth_token.strip()
    if not token:
        raise ValueError("auth_token must not be empty: the proxy would serve anyone")
    limits = BodyLimits(max_body_bytes, max_json_items, body_timeout)
    return ProxyApp(stream_fn, token, limits, resolve_model, cors_origins)


class ProxyApp:
    """The ASGI application made by :func:`create_proxy_app`."""

    __slots__ = ("_entry", "_limits", "_resolve_model", "_stream_fn", "_token")

    def __init__(
        self,
        stream_fn: StreamFn,
        auth_token: str,
        limits: BodyLimits,
        resolve_model: ModelResolver | None,
        cors_origins: Sequence[str] | None = None,
    ) -> None:
        self._stream_fn = stream_fn
        self._token = auth_token.encode()
        self._limits = limits
        self._resolve_model = resolve_model
        self._entry: Callable[[Scope, Receive, Send], Awaitable[None]] = self._serve
        if cors_origins is not None:
            self._entry = _with_cors(self._serve, cors_origins)

    def __repr__(self) -> str:
        return f"<ProxyApp stream_fn={self._stream_fn!r}>"  # never the token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point: ``http`` and ``lifespan`` scopes (others are not served)."""
        await self._entry(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            request = await self._read_request(scope, receive)
        except Refused as refusal:
            await _send_error(send, refusal)
            return
        except Disconnected:
            return
        _log.debug("proxy stream: model %s (api %s)", request.model.id, request.model.api)
        await _stream(self._stream_fn, request, receive, send)

    async def _read_request(self, scope: Scope, receive: Receive) -> ProxyRequest:
        """Route, authenticate, read and validate; :class:`Refused` says why not."""
        if _path(scope) != _PATH:
            raise Refused(404, "Not found")
        if scope["method"] != "POST":
            raise Refused(405, "Method not allowed", ((b"allow", b"POST"),))
        self._authenticate(scope)
        request = await parse_request(await read_body(scope["headers"], receive, self._limits))
        if self._resolve_model is None:
            return request
        model = self._resolve_model(request.model)
        if model is None:
            raise Refused(403, f"Model not allowed: {request.model.provider}/{request.model.id}")
        return ProxyRequest(model, request.context, request.options)

    def _authenticate(self, scope: Scope) -> None:
        challenge = ((b"www-authenticate", b"Bearer"),)
        token = _bearer_token(scope)
        if token is None:
            raise Refused(401, "Missing bearer token", challenge)
        if not hmac.compare_digest(token, self._token):
            raise Refused(401, "Invalid bearer token", challenge)


# --- the request ---------------------------------------------------------------------------------


def _path(scope: Scope) -> str:
    """The path below the app's mount point (``root_path``), if it is mounted under one."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _bearer_token(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = bytes(value).strip().partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else None
    return None


# --- the response --------------------------------------------------------------------------------


async def _send_error(send: Send, refusal: Refused) -> None:
    body = json.dumps({"error": refusal.message}, ensure_ascii=False).encode("utf-8", "replace")
    headers = [(b"content-type", b"application/json"), *refusal.headers]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _stream(stream_fn: StreamFn, request: ProxyRequest, receive: Receive, send: Send) -> None:
    """Stream the events of one call; a client that disconnects aborts and cancels it."""
    controller = AbortController()
    options = request.options.to_stream_options(controller.signal)

    async def send_or_abort(message: Message) -> None:
        try:
            await send(message)
        except OSError:
            # ASGI servers may raise on a closed connection instead of reporting a disconnect.
            controller.abort(_CLIENT_GONE)
            raise

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(_watch_disconnect, receive, controller, task_group.cancel_scope)
        try:
            await send_or_abort(_STREAM_START)
            await _send_events(stream_fn, request, options, send_or_abort)
        except OSError:
            pass  # the stream has been aborted and closed: nobody is left to tell
        task_group.cancel_scope.cancel()  # done: stop watching


async def _watch_disconnect(
    receive: Receive, controller: AbortController, scope: anyio.CancelScope
) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    # The signal first, so a provider that checks it between chunks sees why it stops.
    controller.abort(_CLIENT_GONE)
    scope.cancel()


async def _send_events(
    stream_fn: StreamFn, request: ProxyRequest, options: StreamOptions, send: Send
) -> None:
    """Send the wire lines of one call, up to and including its terminal event, and end the
    body. Whatever the stream function does, the client gets exactly one terminal event."""
    encoder = WireEncoder(redacted=True)  # redacted here, off the event loop when long
    try:
        iterator = await open_stream(stream_fn, request.model, request.context, options)
    except Exception as exc:
        await _send_chunk(send, encoder.failure(await _exception_text(exc)))
    else:
        try:
            while not encoder.finished:
                await _send_chunk(send, await _next_chunk(iterator, encoder))
        finally:
            await close_stream(iterator)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _next_chunk(iterator: AsyncIterator[Any], encoder: WireEncoder) -> bytes:
    """The wire line(s) of the next event; a failure of the stream becomes its error line."""
    try:
        event = await anext(iterator)
        if isinstance(event, StreamError):  # once per call: the deltas pass untouched
            event = await redact_event(event)
        return encoder.encode(event)
    except StopAsyncIteration:
        return encoder.failure(NO_TERMINAL_EVENT)
    except Exception as exc:
        return encoder.failure(await _exception_text(exc))


async def _send_chunk(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def _exception_text(exc: Exception) -> str:
    # The log gets the type only: a message can hold a URL with a key in it.
    _log.warning("the proxied stream function raised %s", type(exc).__name__)
    return await public_error_text(exc)


def _with_cors(
    app: Callable[[Scope, Receive, Send], Awaitable[None]], origins: Sequence[str]
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """``app`` behind Starlette's CORS middleware: preflights answered, POSTs marked."""
    try:
        from starlette.middleware.cors import CORSMiddleware
    except ImportError:  # pragma: no cover - starlette is part of the server extra
        raise ImportError(f"cors_origins needs starlette: {install_hint('server')}") from None
    return CORSMiddleware(
        app,
        allow_origins=list(origins),
        allow_methods=["POST"],
        allow_headers=["authorization", "content-type"],
        max_age=600,
    )


async def _lifespan(receive: Receive, send: Send) -> None:
    """Nothing to set up or tear down, but servers ask."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
