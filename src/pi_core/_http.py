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
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypeVar

import anyio
import httpx

from .nursery import AbortSignal

__all__ = [
    "DEFAULT_HTTP_TIMEOUT",
    "MAX_LINE_BYTES",
    "RETRY_STATUSES",
    "HttpCall",
    "RequestAborted",
    "RequestGuard",
    "RequestTimedOut",
    "RetryPolicy",
    "discard",
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

    async def read_capped(self, limit: int) -> bytes:
        """The response body, at most about ``limit`` bytes of it (an error body, say)."""
        assert self.response is not None
        body = bytearray()
        chunks = self.read_body(self.response.aiter_bytes())
        while len(body) < limit and (chunk := await self.next(chunks)):
            body += chunk
        return bytes(body)

    async def close(self) -> None:
        """Release the body, the response and an owned client, also while being cancelled."""
        with anyio.CancelScope(shield=True):
            if self._body is not None:
                await discard(self._body)
            if self.response is not None:
                await self.response.aclose()
            if self._owned:
                await self._http.aclose()
