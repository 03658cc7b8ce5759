"""Reading a request body from an untrusted client, for every server pi_core runs: within a
size, a count of JSON values and a time, each refused with a 4xx status and a message saying why.

The cap is checked as the chunks arrive, so a client cannot make a server hold more than the
limit in memory, nor hold a connection open by sending its body slowly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NoReturn

import anyio

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_JSON_ITEMS",
    "BodyLimits",
    "Disconnected",
    "Refused",
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


class Refused(Exception):
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
        Refused: 413 for too many bytes or JSON values (checked as the chunks arrive), 408 when
            the body has not arrived within the timeout.
        Disconnected: the client went away.
    """
    for name, value in headers:
        if name == b"content-length" and value.isdigit() and int(value) > limits.max_bytes:
            _too_large(limits)  # refused before a byte of it is read
    with anyio.move_on_after(limits.timeout):
        return await _receive_body(receive, limits)
    raise Refused(408, f"Request body not received within {limits.timeout:g} s")


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
            raise Refused(
                413, f"Request body has too many JSON values (limit {limits.max_json_items})"
            )
        if not message.get("more_body", False):
            return bytes(body)


def _too_large(limits: BodyLimits) -> NoReturn:
    raise Refused(413, f"Request body too large (limit {limits.max_bytes} bytes)")
