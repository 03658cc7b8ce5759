"""``stream_proxy``: a stream function that calls a model through a proxy server.

It speaks upstream's proxy protocol: ``POST {proxy_url}/api/stream`` with a Bearer token and the
JSON of ``{model, context, options}``, its context in the form of upstream 1.6.0 or, for a
server of the 0.73.1 era, of 0.73.1; the response is a stream of ``data: {json}`` event lines
without ``partial``, from which one shared partial message is rebuilt (see :mod:`._wire`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Literal

import httpx

from .. import AssistantMessageEvent, Context, Model, ProxyError, StreamDone, StreamError
from .._http import (
    HttpCall,
    RequestAborted,
    RequestGuard,
    RequestTimedOut,
    http_failure_text,
    is_http_stack_error,
)
from .._options import StreamOptions
from .._redact import REDACTED
from ._decode import WireDecoder
from ._wire import ProxyWire, check_wire, encode_request

__all__ = ["ProxyStream", "stream_proxy"]

_NO_TERMINAL = "Connection closed by proxy server before the response completed"
_ABORTED_BEFORE_RESPONSE = "This operation was aborted"
_ABORTED_DURING_BODY = "Request aborted by user"


async def stream_proxy(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    proxy_url: str,
    auth_token: str,
    client: httpx.AsyncClient | None = None,
    wire: ProxyWire = "1.6",
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream a reply of ``model`` through the proxy server at ``proxy_url``.

    Use it as a stream function with the proxy's address bound: :class:`ProxyStream` binds
    them (``ProxyStream(url, token)``) with a repr that never shows the token, which a
    ``functools.partial`` would.

    Args:
        model: the model, sent whole; the server picks its provider by ``model.api``.
        context: what the model sees, sent in the form ``wire`` names (its ``system_prompt``
            and ``tools`` shorthand folded into the transcript first).
        options: ``temperature``, ``max_tokens``, ``reasoning``, ``cache_retention``,
            ``session_id``, ``headers``, ``metadata`` and ``thinking_budgets`` are sent;
            ``api_key`` never is (the server uses its own). ``signal`` aborts the call at once;
            ``timeout`` bounds it in seconds. The client does not retry (``max_retries`` is
            ignored): the provider behind the server retries its own requests.
        proxy_url: the server's base URL; ``/api/stream`` is appended.
        auth_token: sent as ``Authorization: Bearer <auth_token>``.
        client: the HTTP client to use (and leave open); by default one is made per call.
        wire: the form of the request body. ``"1.6"`` (the default), upstream 1.6.0's: the
            transcript alone, ``{messages}``, its system messages carrying the prompt and the
            tools. ``"0.73"``, for a server of the 0.73.1 era, which knows no system messages:
            ``{systemPrompt, messages, tools}`` with the prompt and the tools the transcript
            declares at its end, and its other messages.

    Yields:
        The provider stream protocol: ``StreamStart`` first, then block events, then exactly one
        ``StreamDone`` or ``StreamError``. Every event carries the same partial message, which
        is also the final one. Failures are ``StreamError`` events, never exceptions: an error
        status gives ``Proxy error: <error>`` (the server's JSON ``error``) or ``Proxy error:
        <status> <reason>``; an abort gives reason ``"aborted"``; a body that ends without a
        terminal event gives ``Connection closed by proxy server before the response
        completed``. A last line without its newline is read.

    Raises:
        ValueError: ``wire`` is not ``"1.6"`` or ``"0.73"`` (before anything is sent).
    """
    check_wire(wire)
    options = options if options is not None else StreamOptions()
    decoder = WireDecoder(model)
    call = _ProxyCall(options, client)
    terminal: StreamDone | StreamError | None = None
    try:
        try:
            url = proxy_url.rstrip("/") + "/api/stream"
            await call.open(url, auth_token, encode_request(model, context, options, wire))
            while decoder.terminal is None and (chunk := await call.read()) is not None:
                for event in decoder.feed(chunk):
                    if event is not decoder.terminal:
                        yield event
            call.check()  # an abort after the last chunk still counts, as upstream
            for event in decoder.flush():  # a last line without its newline
                if event is not decoder.terminal:
                    yield event
            terminal = decoder.terminal
            if terminal is None:
                raise ProxyError(_NO_TERMINAL)
        except Exception as exc:  # the protocol: failures are events, never exceptions
            terminal = decoder.fail(call.failure_reason(), call.describe(exc))
    finally:
        # Before the terminal event: a consumer that stops there leaves nothing open.
        await call.close()
    yield terminal


class _ProxyCall:
    """The HTTP side of one call, with upstream's texts for its failures."""

    __slots__ = ("_call", "_chunks")

    def __init__(self, options: StreamOptions, client: httpx.AsyncClient | None) -> None:
        self._call = HttpCall(RequestGuard(options.signal, options.timeout), client)
        self._chunks: AsyncIterator[bytes] | None = None

    async def open(self, url: str, auth_token: str, body: bytes) -> None:
        """Send the request; raise :class:`ProxyError` for an error status."""
        headers = {
            "Authorization": f"Bearer {auth_token.strip()}",  # a token file's newline
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
        }
        response = await self._call.send(url, headers, body)
        if not response.is_success:
            body = await self._call.read_error_body()
            raise ProxyError(_error_status_text(response, body))
        self._chunks = self._call.read_body(response.aiter_bytes())

    async def read(self) -> bytes | None:
        """The next chunk of the body, or ``None`` at its end."""
        assert self._chunks is not None
        return await self._call.next(self._chunks)

    def check(self) -> None:
        """Raise if the signal has aborted or the deadline has passed."""
        self._call.guard.check()

    def failure_reason(self) -> Literal["aborted", "error"]:
        """``"aborted"`` if the signal has fired, whatever the failure was (as upstream)."""
        return "aborted" if self._call.guard.aborted else "error"

    def describe(self, exc: Exception) -> str:
        """The error text of a failed call."""
        if isinstance(exc, RequestAborted):
            # Upstream's texts: fetch's own before the response arrives, the client's after.
            if self._call.response is None:
                return _ABORTED_BEFORE_RESPONSE
            return _ABORTED_DURING_BODY
        if isinstance(exc, RequestTimedOut):
            return self._call.guard.timed_out_text()
        return _describe(exc)

    async def close(self) -> None:
        """Release the response and the connection, also while being cancelled."""
        await self._call.close()


def _error_status_text(response: httpx.Response, body: bytes) -> str:
    """Upstream's text: ``Proxy error: <error>`` from a JSON body, else the status line."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if error:
        return f"Proxy error: {error if isinstance(error, str) else json.dumps(error)}"
    return f"Proxy error: {response.status_code} {response.reason_phrase}"


def _describe(exc: Exception) -> str:
    if isinstance(exc, ProxyError):
        return str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return f"Proxy request timed out ({type(exc).__name__})"
    if is_http_stack_error(exc):
        return f"Proxy request failed: {http_failure_text(exc)}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ProxyStream:
    """:func:`stream_proxy` with a proxy's address and token bound: a stream function.

    ``ProxyStream(url, token)`` calls the proxy at ``url`` with ``token``; its repr shows the
    URL, never the token (reprs end up in logs and tracebacks).

    Args:
        proxy_url: the server's base URL; ``/api/stream`` is appended.
        auth_token: the proxy's bearer token.
        client: the HTTP client to use (and leave open); by default one is made per call.
        wire: the form of the request body, ``"1.6"`` (the default) or ``"0.73"`` for a server
            of the 0.73.1 era (see :func:`stream_proxy`).

    Raises:
        ValueError: ``wire`` is not one of those.
    """

    __slots__ = ("_auth_token", "client", "proxy_url", "wire")

    def __init__(
        self,
        proxy_url: str,
        auth_token: str,
        *,
        client: httpx.AsyncClient | None = None,
        wire: ProxyWire = "1.6",
    ) -> None:
        check_wire(wire)
        self.proxy_url: str = proxy_url
        self._auth_token = auth_token
        self.client: httpx.AsyncClient | None = client
        self.wire: ProxyWire = wire

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream a reply of ``model`` through the proxy (see :func:`stream_proxy`)."""
        return stream_proxy(
            model,
            context,
            options,
            proxy_url=self.proxy_url,
            auth_token=self._auth_token,
            client=self.client,
            wire=self.wire,
        )

    def __repr__(self) -> str:
        wire = "" if self.wire == "1.6" else f", wire={self.wire!r}"
        return f"ProxyStream(proxy_url={self.proxy_url!r}, auth_token={REDACTED!r}{wire})"
