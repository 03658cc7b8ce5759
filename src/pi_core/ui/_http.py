"""What every endpoint of the UI servers shares: the bearer token, the body cap, CORS, and the
shape of an error.

With a token, every request must carry it (``Authorization: Bearer …``, compared in constant
time) or it is answered 401 before any route sees it: the page, its script, the API alike.
CORS headers are sent only for the origins the server was given. A request body is read within
the same limits as the proxy's (bytes, JSON values, seconds to arrive).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .._request_body import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_JSON_ITEMS,
    BodyLimits,
    Disconnected,
    Refused,
    read_body,
)

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "Refused",
    "check_token",
    "error_response",
    "guarded",
    "read_json",
]


def error_response(status: int, message: str) -> JSONResponse:
    """The JSON answer of a refused request."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def check_token(token: str | None) -> bytes | None:
    """The token as compared (surrounding whitespace, such as a token file's newline, dropped).

    Raises:
        ValueError: the token is given but empty: the server would be open to anyone.
    """
    if token is None:
        return None
    stripped = token.strip()
    if not stripped:
        raise ValueError("auth_token must not be empty: leave it out to serve without one")
    return stripped.encode()


def guarded(
    app: ASGIApp,
    token: bytes | None,
    cors_origins: Sequence[str] | None,
    open_paths: frozenset[str] = frozenset(),
) -> ASGIApp:
    """``app`` behind the bearer token (when there is one; a GET of one of ``open_paths`` is let
    through) and, when origins are given, Starlette's CORS middleware (outside, so that a
    browser's preflight is answered)."""
    inner = app if token is None else _TokenGate(app, token, open_paths)
    if cors_origins is None:
        return inner
    from starlette.middleware.cors import CORSMiddleware

    return CORSMiddleware(
        inner,
        allow_origins=list(cors_origins),
        allow_methods=["GET", "POST"],
        allow_headers=["authorization", "content-type"],
        max_age=600,
    )


class _TokenGate:
    """Answers 401 to every HTTP request without the token."""

    def __init__(self, app: ASGIApp, token: bytes, open_paths: frozenset[str]) -> None:
        self.app = app
        self.token = token
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        opened = scope.get("method") == "GET" and scope.get("path") in self.open_paths
        if scope["type"] == "http" and not opened:
            problem = self._problem(scope)
            if problem is not None:
                await error_response(401, problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _problem(self, scope: Scope) -> str | None:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = bytes(value).strip().partition(b" ")
                if scheme.lower() != b"bearer":
                    break
                if hmac.compare_digest(given.strip(), self.token):
                    return None
                return "Invalid bearer token"
        return "Missing bearer token"


async def read_json(request: Request, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Any:
    """The request's JSON body, within the size, value-count and time limits.

    Raises:
        Refused: 413 (too large), 408 (too slow), 400 (not JSON), 499 (the client left).
    """
    limits = BodyLimits(max_bytes, DEFAULT_MAX_JSON_ITEMS, DEFAULT_BODY_TIMEOUT)
    try:
        body = await read_body(request.headers.raw, request.receive, limits)
    except Disconnected:
        raise Refused(499, "the client disconnected") from None
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise Refused(400, "Malformed JSON in request body") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
