"""``stream_proxy``: a stream function that calls a model through a proxy server.

It speaks upstream's proxy protocol: ``POST {proxy_url}/api/stream`` with a Bearer token and the
JSON of ``{model, context, options}``; the response is a stream of ``data: {json}`` event lines
without ``partial``, from which one shared partial message is rebuilt (see :mod:`._wire`).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, TypeVar

import anyio
import httpx

from .._events import AssistantMessageEvent, StreamDone, StreamError
from .._exceptions import ProxyError
from .._messages import Context, Model
from .._options import StreamOptions
from ._decode import WireDecoder
from ._wire import encode_request

__all__ = ["stream_proxy"]

_T = TypeVar("_T")

_NO_TERMINAL = "Proxy stream ended without a terminal event"
# Upstream's texts: fetch's own before the response arrives, the client's after.
_ABORTED_BEFORE_RESPONSE = "This operation was aborted"
_ABORTED_DURING_BODY = "Request aborted by user"
_MAX_ERROR_BODY = 64 * 1024
# A reasoning model behind the proxy can be silent for minutes; StreamOptions.timeout bounds
# the whole call when it is set.
_HTTP_TIMEOUT = httpx.Timeout(600.0, connect=30.0)


async def stream_proxy(
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    *,
    proxy_url: str,
    auth_token: str,
    client: httpx.AsyncClient | None = None,
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream a reply of ``model`` through the proxy server at ``proxy_url``.

    Use it as a stream function with the proxy's address bound, e.g.
    ``functools.partial(stream_proxy, proxy_url=url, auth_token=token)``.

    Args:
        model: the model, sent whole; the server picks its provider by ``model.api``.
        context: what the model sees; tools are sent as ``{name, description, parameters,
            label?, executionMode?}``.
        options: ``temperature``, ``max_tokens``, ``reasoning``, ``cache_retention``,
            ``session_id``, ``headers``, ``metadata`` and ``thinking_budgets`` are sent;
            ``api_key`` never is (the server uses its own). ``signal`` aborts the call at once;
            ``timeout`` bounds it in seconds.
        proxy_url: the server's base URL; ``/api/stream`` is appended.
        auth_token: sent as ``Authorization: Bearer <auth_token>``.
        client: the HTTP client to use (and leave open); by default one is made per call.

    Yields:
        The provider stream protocol: ``StreamStart`` first, then block events, then exactly one
        ``StreamDone`` or ``StreamError``. Every event carries the same partial message, which
        is also the final one. Failures are ``StreamError`` events, never exceptions: an error
        status gives ``Proxy error: <error>`` (the server's JSON ``error``) or ``Proxy error:
        <status> <reason>``; an abort gives reason ``"aborted"``; a body that ends without a
        terminal event gives ``Proxy stream ended without a terminal event``.
    """
    options = options if options is not None else StreamOptions()
    decoder = WireDecoder(model)
    call = _ProxyCall(options, client)
    terminal: StreamDone | StreamError | None = None
    try:
        try:
            url = proxy_url.rstrip("/") + "/api/stream"
            await call.open(url, auth_token, encode_request(model, context, options))
            while decoder.terminal is None and (chunk := await call.read()) is not None:
                for event in decoder.feed(chunk):
                    if event is not decoder.terminal:
                        yield event
            call.check()  # an abort after the last chunk still counts, as upstream
            terminal = decoder.terminal
            if terminal is None:
                raise ProxyError(_NO_TERMINAL)
        except Exception as exc:  # the protocol: failures are events, never exceptions
            terminal = decoder.fail(call.failure_reason(), _describe(exc))
    finally:
        # Before the terminal event: a consumer that stops there leaves nothing open.
        await call.close()
    yield terminal


class _Aborted(Exception):
    """The signal fired during the call; the text is what upstream reports at that point."""


class _TimedOut(Exception):
    """``StreamOptions.timeout`` passed during the call."""


class _ProxyCall:
    """The HTTP side of one call: every network await is cancelled at once by an abort or the
    deadline, each in its own cancel scope, so that no scope is open while the generator yields
    (a cancel scope must never span a ``yield``)."""

    __slots__ = ("_abort_text", "_chunks", "_deadline", "_http", "_options", "_owned", "_response")

    def __init__(self, options: StreamOptions, client: httpx.AsyncClient | None) -> None:
        self._options = options
        timeout = options.timeout
        self._deadline = math.inf if timeout is None else anyio.current_time() + timeout
        self._owned = client is None
        self._http = client if client is not None else httpx.AsyncClient(timeout=_HTTP_TIMEOUT)
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._abort_text = _ABORTED_BEFORE_RESPONSE

    async def open(self, url: str, auth_token: str, body: bytes) -> None:
        """Send the request; raise :class:`ProxyError` for an error status."""
        headers = {
            "Authorization": f"Bearer {auth_token}",
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
        }
        request = self._http.build_request("POST", url, headers=headers, content=body)
        response = await self._guard(self._http.send, request, stream=True)
        self._response = response
        self._abort_text = _ABORTED_DURING_BODY
        if not response.is_success:
            raise ProxyError(_error_status_text(response, await self._read_error_body(response)))
        self._chunks = response.aiter_bytes()

    async def read(self) -> bytes | None:
        """The next chunk of the body, or ``None`` at its end."""
        assert self._chunks is not None
        return await self._guard(anext, self._chunks, None)

    def check(self) -> None:
        """Raise if the signal has aborted or the deadline has passed."""
        signal = self._options.signal
        if signal is not None and signal.aborted:
            raise _Aborted(self._abort_text)
        if anyio.current_time() >= self._deadline:
            raise _TimedOut(f"Request timed out after {self._options.timeout:g} s")

    def failure_reason(self) -> Literal["aborted", "error"]:
        """``"aborted"`` if the signal has fired, whatever the failure was (as upstream)."""
        signal = self._options.signal
        return "aborted" if signal is not None and signal.aborted else "error"

    async def close(self) -> None:
        """Release the response and the connection, also while being cancelled."""
        with anyio.CancelScope(shield=True):
            if self._chunks is not None:
                await _discard(self._chunks)
            if self._response is not None:
                await self._response.aclose()
            if self._owned:
                await self._http.aclose()

    async def _guard(self, fn: Callable[..., Awaitable[_T]], *args: Any, **kwargs: Any) -> _T:
        """``await fn(...)``, cancelled at once by an abort or the deadline."""
        self.check()
        signal = self._options.signal
        with anyio.CancelScope(deadline=self._deadline) as scope:
            unregister = signal.on_abort(scope.cancel) if signal is not None else None
            try:
                result = await fn(*args, **kwargs)
            finally:
                if unregister is not None:
                    unregister()
        self.check()  # also when fn finished from buffered data without a checkpoint
        if scope.cancelled_caught:  # the deadline, a hair before current_time() passed it
            raise _TimedOut(f"Request timed out after {self._options.timeout:g} s")
        return result

    async def _read_error_body(self, response: httpx.Response) -> bytes:
        body = bytearray()
        chunks = response.aiter_bytes()
        self._chunks = chunks  # so close() finishes it
        while len(body) < _MAX_ERROR_BODY and (chunk := await self._guard(anext, chunks, None)):
            body += chunk
        return bytes(body)


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
    if isinstance(exc, (ProxyError, _Aborted, _TimedOut)):
        return str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return f"Proxy request timed out ({type(exc).__name__})"
    text = str(exc)
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, httpx.TransportError):
        return f"Proxy request failed: {detail}"
    return detail


async def _discard(chunks: AsyncIterator[bytes]) -> None:
    """Finish a body iterator that was left early, and httpx's generators under it.

    Closing only the outer generator would leave the inner ones suspended until the garbage
    collector finds them (trio warns about each). Reading on in a cancelled scope makes the
    cancellation strike at the next network read, deep in the chain, which ends all of them.
    """
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            while await anext(chunks, None) is not None:
                pass
        except Exception:  # a broken body is being thrown away anyway
            pass
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()
