"""Reading and checking the body of a proxy request: its size, its time, its JSON and its values.

A proxy serves clients it does not trust with its own keys, so it refuses up front what would
cost it memory or time (a body too large, too many JSON values, a client that stalls) and what
a provider would choke on (``NaN``, numbers out of range, absurd token counts), each with a 4xx
status and a message saying why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NoReturn

import anyio
import anyio.to_thread

from .._texts import clip
from ..serialization import from_dict
from ._wire import ProxyRequest

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_JSON_ITEMS",
    "MAX_TOKENS_LIMIT",
    "BodyLimits",
    "Disconnected",
    "Reject",
    "parse_request",
    "read_body",
]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""The default limit of a request body: a long transcript with images fits in it."""

DEFAULT_MAX_JSON_ITEMS = 1_000_000
"""The default limit of a body's JSON values, counted as its ``{``, ``[`` and ``,`` bytes.

Parsed, a JSON value costs far more than its bytes (a small object: ~200 bytes of Python objects
for 8 bytes of JSON), so the byte limit alone lets a body of small objects take gigabytes.
Counting these bytes errs high (they count inside strings too), never low.
"""

DEFAULT_BODY_TIMEOUT = 60.0
"""Seconds a client has to send its whole request body."""

MAX_TOKENS_LIMIT = 10_000_000
"""The largest token count a request may ask for (``maxTokens``, budgets, the model's limits)."""

_MAX_ERROR_TEXT = 2000
_PARSE_IN_THREAD_BYTES = 256 * 1024
"""Bodies from this size on are parsed in a worker thread, not on the event loop."""


class Reject(Exception):
    """A request refused before streaming: its status, ``{"error": <message>}``, headers."""

    def __init__(
        self, status: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


class Disconnected(Exception):
    """The client went away while the request body was being read."""


class BodyLimits:
    """What a request body may cost: bytes, JSON values, seconds to arrive."""

    __slots__ = ("max_bytes", "max_json_items", "timeout")

    def __init__(self, max_bytes: int, max_json_items: int, timeout: float) -> None:
        for name, value in (
            ("max_body_bytes", max_bytes),
            ("max_json_items", max_json_items),
            ("body_timeout", timeout),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value}")
        self.max_bytes: int = max_bytes
        self.max_json_items: int = max_json_items
        self.timeout: float = timeout


async def read_body(headers: Any, receive: Receive, limits: BodyLimits) -> bytes:
    """The whole request body, within ``limits``.

    Raises:
        Reject: 413 for too many bytes or JSON values (checked as the chunks arrive), 408 when
            the body has not arrived within the timeout.
        Disconnected: the client went away.
    """
    for name, value in headers:
        if name == b"content-length" and value.isdigit() and int(value) > limits.max_bytes:
            _too_large(limits)  # refused before a byte of it is read
    with anyio.move_on_after(limits.timeout):
        return await _receive_body(receive, limits)
    raise Reject(408, f"Request body not received within {limits.timeout:g} s")


async def _receive_body(receive: Receive, limits: BodyLimits) -> bytes:
    body = bytearray()
    items = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        body += chunk
        if len(body) > limits.max_bytes:
            _too_large(limits)
        items += chunk.count(b"{") + chunk.count(b"[") + chunk.count(b",")
        if items > limits.max_json_items:
            raise Reject(
                413, f"Request body has too many JSON values (limit {limits.max_json_items})"
            )
        if not message.get("more_body", False):
            return bytes(body)


def _too_large(limits: BodyLimits) -> NoReturn:
    raise Reject(413, f"Request body too large (limit {limits.max_bytes} bytes)")


async def parse_request(body: bytes) -> ProxyRequest:
    """The request a body holds, checked; a large body is parsed off the event loop.

    Raises:
        Reject: 400 for malformed JSON (``NaN``, infinities and numbers out of range included),
            422 for a body of the wrong shape or with values out of range.
    """
    if len(body) >= _PARSE_IN_THREAD_BYTES:
        return await anyio.to_thread.run_sync(_parse_request, body)
    return _parse_request(body)


def _parse_request(body: bytes) -> ProxyRequest:
    try:
        # Python's parser, not a faster one: it takes a lone surrogate escape ("\ud800", what
        # JavaScript writes for a broken paste) as JSON.parse does, and lets us refuse NaN.
        data = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        text = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise Reject(400, f"Malformed JSON in request body: {_clip(text)}") from None
    try:
        request: ProxyRequest = from_dict(data, ProxyRequest)
    except ValueError as exc:
        # "Cannot load ProxyRequest: <problem> @ $.path; ..." → the problems alone
        _, colon, problems = str(exc).partition(": ")
        raise _invalid(problems if colon else str(exc)) from None
    _check_token_counts(request)
    return request


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {_clip(text)}")
    return value


def _check_token_counts(request: ProxyRequest) -> None:
    options, model = request.options, request.model
    counts = [
        ("options.maxTokens", options.max_tokens, 1),
        ("model.maxTokens", model.max_tokens, 0),
        ("model.contextWindow", model.context_window, 0),
    ]
    for level, budget in (options.thinking_budgets or {}).items():
        counts.append((f"options.thinkingBudgets.{level}", budget, 0))
    problems = [
        f"expected an integer from {low} to {MAX_TOKENS_LIMIT}, got {value} @ $.{path}"
        for path, value, low in counts
        if value is not None and not low <= value <= MAX_TOKENS_LIMIT
    ]
    if problems:
        raise _invalid("; ".join(problems))


def _invalid(problems: str) -> Reject:
    return Reject(422, f"Invalid request body: {_clip(problems)}")


def _clip(text: str) -> str:
    return clip(text, _MAX_ERROR_TEXT)
