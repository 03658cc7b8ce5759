"""``mcp_tools``: a session with an MCP server for the length of a block, its tools as AgentTools."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import mcp.types as mcp_types

from mcp import ClientSession

from .._tools import AgentTool
from ..nursery import unwrap_single_exception
from ._servers import HttpServer, StdioServer, describe, open_session, startup_step
from ._tools import agent_tool, select_tools

__all__ = ["mcp_tools"]


@asynccontextmanager
async def mcp_tools(
    server: StdioServer | HttpServer | ClientSession,
    *,
    prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    timeout: float = 30.0,  # bounds the server's startup, not the block
) -> AsyncIterator[list[AgentTool]]:
    """``async with mcp_tools(server) as tools``: the server's tools, usable inside the block.

    One session is opened for the block and shared by every call of every run made in it
    (parallel calls are multiplexed on it); it is closed when the block exits.

    Args:
        server: a :class:`StdioServer`, an :class:`HttpServer`, or an ``mcp.ClientSession``
            that is already initialized (it is used as it is and left open).
        prefix: prepended to every tool name (``f"{prefix}{name}"``), to keep the tools of
            several servers apart.
        include: the server's own tool names to keep (all when ``None``).
        exclude: the server's own tool names to leave out.
        timeout: seconds to wait for the server to answer ``initialize`` and list its tools.

    Raises:
        ToolServerError: the server could not start, exited before it was ready, or did not
            answer within ``timeout``.
    """
    with unwrap_single_exception():
        if isinstance(server, ClientSession):
            yield await _tools_of(server, server, prefix, include, exclude, timeout)
            return
        async with open_session(server, timeout) as session:
            yield await _tools_of(session, server, prefix, include, exclude, timeout)


async def _tools_of(
    session: ClientSession,
    server: StdioServer | HttpServer | ClientSession,
    prefix: str | None,
    include: Iterable[str] | None,
    exclude: Iterable[str] | None,
    seconds: float,
) -> list[AgentTool]:
    name = describe(server)
    with startup_step(name, "list its tools", seconds):
        listed = await _list_all(session)
    selected = select_tools(listed, include, exclude)
    return [agent_tool(session, tool, prefix or "", name) for tool in selected]


async def _list_all(session: ClientSession) -> list[mcp_types.Tool]:
    """Every tool of the server, across pages."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    while True:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
