"""The HTTP machinery that the providers and the proxy client share.

One request is guarded by a :class:`RequestGuard`: every await on the network runs in its own
short cancel scope that the abort signal and the request's deadline cancel, so an abort or a
timeout stops the request at once, and no scope stays open while a generator yields to its
consumer (the hazard of cancel scopes in async generators, PEP 789). What the request leaves
open (a body iterator read halfway, the response, a client made for the one request) is closed by
:func:`discard` and :meth:`HttpCall.close`, also while the caller is being cancelled.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx

from .nursery import AbortSignal

__all__ = [
    "DEFAULT_HTTP_TIMEOUT",
    "HttpCall",
    "RequestAborted",
    "RequestGuard",
    "RequestTimedOut",
    "discard",
]

T = TypeVar("T")

DEFAULT_HTTP_TIMEOUT = httpx.Timeout(600.0, connect=30.0)
"""Timeouts of a client made for one request: a reasoning model can be silent for minutes, so
reads may take long; ``StreamOptions.timeout`` bounds the whole request when it is set."""


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


class HttpCall:
    """One POST with a streamed response: the client, the response and the body being read.

    Every network await goes through :attr:`guard`. :meth:`close` releases all of it (the
    client only when this call made it), shielded, so it also runs while being cancelled.
    """

    __slots__ = ("_body", "_http", "_owned", "guard", "response")

    def __init__(self, guard: RequestGuard, client: httpx.AsyncClient | None) -> None:
        self.guard = guard
        self._owned = client is None
        self._http = (
            client if client is not None else httpx.AsyncClient(timeout=DEFAULT_HTTP_TIMEOUT)
        )
        self.response: httpx.Response | None = None
        self._body: AsyncIterator[Any] | None = None

    async def send(self, url: str, headers: dict[str, str], content: bytes) -> httpx.Response:
        """POST ``content`` to ``url``; the response's body is left to be streamed."""
        request = self._http.build_request("POST", url, headers=headers, content=content)
        self.response = await self.guard.call(self._http.send, request, stream=True)
        return self.response

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
