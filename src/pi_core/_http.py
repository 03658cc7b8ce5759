"""The HTTP machinery that the providers and the proxy client share.

One request is guarded by a :class:`RequestGuard`: every await on the network runs in its own
short cancel scope that the abort signal and the request's deadline cancel, so an abort or a
timeout stops the request at once, and no scope stays open while a generator yields to its
consumer (the hazard of cancel scopes in async generators, PEP 789). What the request leaves
open (a body iterator read halfway, the response, a client made for the one request) is closed by
:func:`discard` and :meth:`HttpCall.close`, also while the caller is being cancelled.

:meth:`HttpCall.send` retries as the official OpenAI and Anthropic SDKs do: a connection error or
a status of :data:`RETRY_STATUSES` (unless the server says ``x-should-retry: false``; any status
with ``x-should-retry: true``) is retried up to ``max_retries`` times, after the delay the server
asks for (``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date) or else an
exponential backoff from 0.5 s to 8 s with up to 25 % jitter. A server asking for longer than
``max_retry_delay`` is not waited for: its response is returned at once, and
:attr:`HttpCall.retry_note` says how long it asked for. The wait is a guarded await, so an abort
ends it at once. Retries happen only in :meth:`HttpCall.send`, before a byte of the response
body was read: nothing is retried once a reply streams.

A failure of the HTTP stack is told by :func:`http_failure_text`, never by the stack's own text:
h11 refuses ``Illegal header value b'Bearer sk-…'``, quoting the key. An error response's body
is read up to :data:`MAX_ERROR_BODY` (:meth:`HttpCall.read_error_body`).
"""

from __future__ import annotations

import email.utils
import logging
import math
import os
import random
import ssl
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Final, TypeVar

import anyio
import httpx

from ._texts import REQUEST_TIMED_OUT, connection_error_text
from .nursery import AbortSignal

__all__ = [
    "DEFAULT_HTTP_TIMEOUT",
    "MAX_ERROR_BODY",
    "MAX_LINE_BYTES",
    "RETRY_STATUSES",
    "HttpCall",
    "RequestAborted",
    "RequestGuard",
    "RequestTimedOut",
    "RetryPolicy",
    "discard",
    "http_failure_text",
    "is_http_stack_error",
    "retry_after",
    "should_retry",
]

T = TypeVar("T")

DEFAULT_HTTP_TIMEOUT = httpx.Timeout(600.0, connect=30.0)
"""Timeouts of a client made for one request: a reasoning model can be silent for minutes, so
reads may take long; ``StreamOptions.timeout`` bounds the whole request when it is set."""


RETRY_STATUSES: Final[frozenset[int]] = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""Statuses retried: timeouts, conflicts, rate limits, server errors and Anthropic's overload."""

_RETRIED_ERRORS = (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError)
"""Connection failures retried (a refused or dropped connection, a client-side timeout);
a malformed request (``httpx.LocalProtocolError``, e.g. an illegal header) is not."""

_INITIAL_DELAY = 0.5
_MAX_BACKOFF = 8.0
_JITTER = 0.25

_log = logging.getLogger("pi_core")

# The wait between attempts and its jitter; tests replace them to see and release each wait.
_sleep: Callable[[float], Awaitable[None]] = anyio.sleep
_random: Callable[[], float] = random.random


MAX_LINE_BYTES = 32 * 1024 * 1024
"""The longest line of an event stream a client holds in memory (and the most data of one
event): a longer one ends the reply with an error instead of growing without end."""


MAX_ERROR_BODY = 64 * 1024
"""The most bytes of an error response's body a client reads: its text is for a person, and a
server must not make a client hold megabytes to report one failure."""

_HTTP_STACK = frozenset({"httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2", "ssl", "socket"})
"""Packages whose exception texts may quote request headers or connection details."""

_CAUSES = {
    "ConnectError": "cannot connect",
    "ReadError": "the connection broke while reading the response",
    "WriteError": "the connection broke while sending the request",
    "CloseError": "the connection broke while closing",
    "RemoteProtocolError": "the server closed the connection or broke the HTTP protocol",
    "LocalProtocolError": "a request header is not valid HTTP (such as a value with a line break)",
    "ProxyError": "the HTTP proxy refused the request",
    "UnsupportedProtocol": "the URL is not http:// or https://",
    "DecodingError": "the response body cannot be decoded",
    "TooManyRedirects": "too many redirects",
}
"""What a failure of the HTTP stack means, by the name of its class (or a base class): the same
in httpx, httpcore and the MCP SDK's httpx2."""


def is_http_stack_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from the HTTP stack, whose own texts must not be shown."""
    return type(exc).__module__.partition(".")[0] in _HTTP_STACK


def http_failure_text(exc: BaseException) -> str:
    """The error text of a request that failed in the HTTP stack, never the stack's own text.

    A timeout is ``Request timed out.``; anything else ``Connection error (<url>): <cause>``, the
    cause from the operating system where it gave one (``Connection refused``, ``Name or service
    not known``), the URL without its query and credentials.
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "TimeoutException" in names:
        return REQUEST_TIMED_OUT
    cause = _os_cause(exc) or next(
        (_CAUSES[cls.__name__] for cls in type(exc).__mro__ if cls.__name__ in _CAUSES),
        type(exc).__name__,
    )
    return connection_error_text(cause, _request_url(exc))


def _os_cause(exc: BaseException) -> str | None:
    """The operating system's words for the first socket error under ``exc``, if any."""
    for inner in _chain(exc):
        if isinstance(inner, ssl.SSLError):
            detail = getattr(inner, "verify_message", None) or inner.reason
            return f"TLS error: {detail}" if detail else "TLS error"
        if isinstance(inner, OSError) and inner.errno is not None:
            if inner.errno > 0:
                return os.strerror(inner.errno)
            if isinstance(inner.strerror, str):  # a resolver error (socket.gaierror)
                return inner.strerror
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what lies under it: causes, contexts and the members of exception groups."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(getattr(current, "exceptions", ()))
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _request_url(exc: BaseException) -> str | None:
    """The URL ``exc``'s request went to, without query, fragment and user info."""
    try:
        url = str(exc.request.url)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # httpx raises RuntimeError when no request is set
        return None
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


class RequestAborted(Exception):
    """The abort signal fired while the request was under way."""


class RequestTimedOut(Exception):
    """The request's own timeout passed while it was under way."""


class RequestGuard:
    """Abort and timeout for one request, applied to each network await separately.

    ``await guard.call(fn, ...)`` runs ``fn`` inside ``signal.scope()`` with the request's
    deadline, and raises :class:`RequestAborted` or :class:`RequestTimedOut` when either fired,
    also when ``fn`` finished from buffered data without reaching a checkpoint.
    """

    __slots__ = ("_deadline", "_signal", "_timeout")

    def __init__(self, signal: AbortSignal | None, timeout: float | None) -> None:
        self._signal = signal
        self._timeout = timeout
        self._deadline = anyio.current_time() + timeout if timeout is not None else math.inf

    @property
    def timeout(self) -> float | None:
        """The timeout in seconds, or ``None``."""
        return self._timeout

    @property
    def aborted(self) -> bool:
        """True once the abort signal has fired."""
        return self._signal is not None and self._signal.aborted

    def timed_out_text(self) -> str:
        """The error text of a request that ran out of time."""
        return f"Request timed out after {self._timeout:g} s"

    def check(self) -> None:
        """Raise if the signal has aborted or the deadline has passed."""
        if self._signal is not None and self._signal.aborted:
            raise RequestAborted
        if anyio.current_time() >= self._deadline:
            raise RequestTimedOut

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """``await fn(*args, **kwargs)``, cancelled at once by an abort or the deadline."""
        self.check()
        if self._signal is None:
            with anyio.CancelScope(deadline=self._deadline):
                return await self._checked(fn(*args, **kwargs))
        else:
            with self._signal.scope() as scope:
                scope.deadline = self._deadline
                return await self._checked(fn(*args, **kwargs))
        # Reached only when a scope above caught its cancellation: name the cause.
        self.check()
        raise RequestTimedOut  # the deadline fell a hair before current_time() moved past it

    async def _checked(self, awaitable: Awaitable[T]) -> T:
        result = await awaitable
        self.check()  # the await may have finished from buffered data, never checkpointing
        return result


async def discard(iterator: AsyncIterator[Any]) -> None:
    """Finish a body iterator that was left early (abort, error), and httpx's generators under it.

    Closing only the outermost generator would leave httpx's inner body generators suspended,
    to be collected later (trio warns about each). Reading on inside a cancelled scope lets the
    cancellation strike at the next network read, deep in the chain, which ends every generator
    of it; what is read meanwhile is dropped, and so is an error of the broken body.
    """
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            while await anext(iterator, None) is not None:
                pass
        except Exception:  # a broken body is being thrown away anyway
            pass
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


class RetryPolicy:
    """How often and how long :class:`HttpCall` retries (see the module docstring)."""

    __slots__ = ("max_delay", "max_retries")

    def __init__(self, max_retries: int = 2, max_delay: float = 60.0) -> None:
        self.max_retries = max(0, max_retries)
        self.max_delay = max_delay

    def backoff(self, attempt: int) -> float:
        """The wait before retry number ``attempt + 1`` when the server named none."""
        delay = min(_INITIAL_DELAY * 2.0**attempt, _MAX_BACKOFF) * (1 - _JITTER * _random())
        return min(delay, self.max_delay)


def should_retry(response: httpx.Response) -> bool:
    """Whether the SDKs would retry ``response``: ``x-should-retry`` first, then the status."""
    verdict: str = response.headers.get("x-should-retry", "").strip().lower()
    if verdict in ("true", "false"):
        return verdict == "true"
    return response.status_code in RETRY_STATUSES


def retry_after(response: httpx.Response) -> float | None:
    """The delay in seconds the server asks for (``retry-after-ms``, ``retry-after``), if any."""
    headers = response.headers
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


class HttpCall:
    """One POST with a streamed response: the client, the response and the body being read.

    Every network await goes through :attr:`guard`. :meth:`close` releases all of it (the
    client only when this call made it), shielded, so it also runs while being cancelled.
    """

    __slots__ = ("_body", "_http", "_owned", "_retry", "guard", "response", "retry_note")

    def __init__(
        self,
        guard: RequestGuard,
        client: httpx.AsyncClient | None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.guard = guard
        self._owned = client is None
        self._http = (
            client if client is not None else httpx.AsyncClient(timeout=DEFAULT_HTTP_TIMEOUT)
        )
        self._retry = retry if retry is not None else RetryPolicy(0)
        self.response: httpx.Response | None = None
        self._body: AsyncIterator[Any] | None = None
        self.retry_note: str | None = None
        """Why a retryable response was not retried: the server asked for too long a wait."""

    async def send(self, url: str, headers: dict[str, str], content: bytes) -> httpx.Response:
        """POST ``content`` to ``url``, retrying as the policy allows; the response's body is
        left to be streamed. Raises the last connection error when no attempt got a response."""
        attempt = 0
        while True:
            request = self._http.build_request("POST", url, headers=headers, content=content)
            try:
                response = await self.guard.call(self._http.send, request, stream=True)
            except _RETRIED_ERRORS as exc:
                if attempt >= self._retry.max_retries:
                    raise
                delay, cause = self._retry.backoff(attempt), type(exc).__name__
            else:
                wait = self._delay_before_retry(response, attempt)
                if wait is None:
                    self.response = response
                    return response
                delay, cause = wait, str(response.status_code)
                with anyio.CancelScope(shield=True):
                    await response.aclose()
            _log.info("HTTP request failed (%s); retry %d in %.2f s", cause, attempt + 1, delay)
            await self.guard.call(_sleep, delay)
            attempt += 1

    def _delay_before_retry(self, response: httpx.Response, attempt: int) -> float | None:
        """The wait before retrying ``response``, or ``None`` to keep it as the answer."""
        if response.is_success or attempt >= self._retry.max_retries or not should_retry(response):
            return None
        asked = retry_after(response)
        if asked is not None and asked > self._retry.max_delay:
            self.retry_note = (
                f"the server asked to retry after {asked:g} s, "
                f"longer than max_retry_delay ({self._retry.max_delay:g} s)"
            )
            return None
        return asked if asked is not None and asked > 0 else self._retry.backoff(attempt)

    def read_body(self, iterator: AsyncIterator[T]) -> AsyncIterator[T]:
        """Adopt ``iterator`` over the response body, so :meth:`close` finishes it."""
        self._body = iterator
        return iterator

    async def next(self, iterator: AsyncIterator[T]) -> T | None:
        """The next item of ``iterator`` (guarded), or ``None`` at its end."""
        return await self.guard.call(anext, iterator, None)

    async def read_error_body(self) -> bytes:
        """The body of an error response, at most about :data:`MAX_ERROR_BODY` bytes of it."""
        assert self.response is not None
        body = bytearray()
        chunks = self.read_body(self.response.aiter_bytes())
        while len(body) < MAX_ERROR_BODY and (chunk := await self.next(chunks)):
            body += chunk
        return bytes(body[:MAX_ERROR_BODY])

    async def close(self) -> None:
        """Release the body, the response and an owned client, also while being cancelled."""
        with anyio.CancelScope(shield=True):
            if self._body is not None:
                await discard(self._body)
            if self.response is not None:
                await self.response.aclose()
            if self._owned:
                await self._http.aclose()
