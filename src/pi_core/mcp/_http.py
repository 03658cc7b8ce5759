"""The HTTP client of a streamable-HTTP MCP session, made so a dead server fails only its call.

The SDK's transport lets a network error of a request (the server gone: connection refused,
reset) escape from its task group, which would cancel everything running inside
:func:`~pi_core.mcp.mcp_tools`. Here such an error becomes an HTTP 503 carrying a JSON-RPC
error, which the SDK hands to the one request that made it (as an ``MCPError``).
"""

from __future__ import annotations

import httpx2

from ..lowlevel import http_failure_text

__all__ = ["open_http_client"]

_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The SDK's defaults: a server may hold a response stream open for long."""

_SERVER_ERROR = -32000
"""A JSON-RPC implementation-defined server error code."""


class _ServerGoneTransport(httpx2.AsyncBaseTransport):
    """Answers a request that could not reach the server with a JSON-RPC error response."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            # Never the stack's own text: it can quote a request header, a token with it.
            error = {"code": _SERVER_ERROR, "message": http_failure_text(exc)}
            body = {"jsonrpc": "2.0", "id": None, "error": error}
            return httpx2.Response(503, json=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def open_http_client(headers: dict[str, str] | None) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for one MCP session (use it as an async context manager)."""
    transport = _ServerGoneTransport(httpx2.AsyncHTTPTransport())
    return httpx2.AsyncClient(headers=headers, timeout=_TIMEOUT, transport=transport)
