"""Where an MCP server is and how to reach it: a child process over stdio, or streamable HTTP."""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import attrs
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession, StdioServerParameters, stdio_client

from .. import PiCoreError
from ._http import open_http_client
from ._stdio import stdio_transport

__all__ = [
    "HttpServer",
    "StdioServer",
    "ToolServerError",
    "describe",
    "open_session",
    "startup_step",
]


class ToolServerError(PiCoreError):
    """Raised by :func:`~pi_core.mcp.mcp_tools` when an MCP server cannot be used.

    The server could not be started, exited before it was ready, or did not answer ``initialize``
    (and the tool listing) within the timeout. The message names the command line or the URL.
    """


def _str_tuple(args: Iterable[str]) -> tuple[str, ...]:
    return tuple(args)


@attrs.frozen
class StdioServer:
    """An MCP server started as a child process, spoken to over its stdin and stdout.

    ``env`` is merged over the SDK's safe default environment (``HOME``, ``PATH``, ``USER`` and a
    few others on POSIX): the child does not inherit the rest of this process's environment,
    so pass what it needs (an API key, say) here. The process is stopped when the session ends.
    """

    command: str
    args: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    env: Mapping[str, str] | None = attrs.field(default=None, kw_only=True)
    cwd: str | Path | None = attrs.field(default=None, kw_only=True)


@attrs.frozen
class HttpServer:
    """An MCP server reached over streamable HTTP at ``url``, with optional extra ``headers``."""

    url: str
    headers: Mapping[str, str] | None = attrs.field(default=None, kw_only=True)


def describe(server: StdioServer | HttpServer | ClientSession) -> str:
    """How error messages name a server: its command line, its URL, or the name it gave an
    open session."""
    if isinstance(server, StdioServer):
        return shlex.join([server.command, *server.args])
    if isinstance(server, HttpServer):
        return server.url
    name = getattr(server.server_info, "name", None)  # what the server called itself, if it did
    return f"{name} (an open session)" if name else "(an open session)"


@asynccontextmanager
async def open_session(
    server: StdioServer | HttpServer, seconds: float, max_message_bytes: int | None
) -> AsyncIterator[Any]:
    """Connect to ``server`` and initialize the session; yields the ``ClientSession``.

    Over stdio, a message longer than ``max_message_bytes`` is dropped unread (``None``: no
    bound); the request it answers gets an error saying so.

    Raises:
        ToolServerError: the server could not start, closed the connection before it was ready,
            or did not answer ``initialize`` within ``seconds``.
    """
    name = describe(server)
    async with AsyncExitStack() as stack:
        with startup_step(name, "start"):
            transport = _transport(server, name, max_message_bytes)
            read, write = await stack.enter_async_context(transport)
            session = await stack.enter_async_context(ClientSession(read, write))
        with startup_step(name, "answer initialize", seconds):
            await session.initialize()
        yield session


@contextmanager
def startup_step(name: str, step: str, seconds: float | None = None) -> Iterator[None]:
    """A step of a server's start, bounded by ``seconds``.

    Raises:
        ToolServerError: the step failed or timed out; the message names the server and the step.
    """
    # Without a bound, no cancel scope: a step that enters the transport's task groups must not
    # open a scope that would close before them.
    bound = anyio.fail_after(seconds) if seconds is not None else nullcontext()
    try:
        with bound:
            yield
    except TimeoutError:
        raise ToolServerError(f"MCP server {name} did not {step} within {seconds:g} s") from None
    except Exception as exc:
        raise ToolServerError(f"MCP server {name} failed to {step}: {exc}") from exc


def _transport(server: StdioServer | HttpServer, name: str, limit: int | None) -> Any:
    if isinstance(server, StdioServer) and sys.platform != "win32":
        env = dict(server.env) if server.env is not None else None
        args = list(server.args)
        return stdio_transport(
            server.command, args, env, server.cwd, name=name, max_message_bytes=limit
        )
    if isinstance(server, StdioServer):  # the SDK's transport knows Windows' process model
        parameters = StdioServerParameters(
            command=server.command,
            args=list(server.args),
            env=dict(server.env) if server.env is not None else None,
            cwd=server.cwd,
        )
        return stdio_client(parameters)
    headers = dict(server.headers) if server.headers is not None else None
    return _http_transport(server.url, headers)


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str] | None) -> AsyncIterator[Any]:
    async with (
        open_http_client(headers) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams
