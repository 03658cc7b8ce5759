"""``mcp_tools``: a session with an MCP server for the length of a block, its tools as AgentTools."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager

import attrs
import mcp.types as mcp_types

from mcp import ClientSession

from .. import AgentTool
from ..nursery import unwrap_single_exception
from ._log import logger
from ._servers import HttpServer, StdioServer, describe, open_session, startup_step
from ._tools import agent_tool, select_tools

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_TOOL_PAGES",
    "MANY_TOOLS",
    "mcp_tools",
]

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds a ``tools/call`` waits for its answer unless told otherwise (as in other MCP clients):
a server that answers with a broken line, or never, must not hang the run."""

DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024
"""The largest tool result (or other message) taken from a server: more than any model reads."""

DEFAULT_MAX_TOOL_PAGES = 100
"""Pages of ``tools/list`` a server may send: a cursor that never ends is a fault, not a list."""

MANY_TOOLS = 128
"""More tools than this from one server get a warning: every tool's schema goes to the model
on every turn, and some APIs refuse more than 128 tools."""


@asynccontextmanager
async def mcp_tools(
    server: StdioServer | HttpServer | ClientSession,
    *,
    prefix: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    timeout: float = 30.0,  # bounds the server's startup, not the block
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    tool_timeouts: Mapping[str, float | None] | None = None,
    max_tool_pages: int = DEFAULT_MAX_TOOL_PAGES,
    max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES,
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
        call_timeout: seconds to wait for the answer to each ``tools/call``; past it the call
            ends as an error result saying so (``None``: wait without a bound).
        tool_timeouts: a ``call_timeout`` for some tools, by the server's own tool names.
        max_tool_pages: how many pages of ``tools/list`` the server may send.
        max_result_bytes: the largest result a call takes; a larger one ends the call as an
            error result saying so (``None``: no bound). Over stdio it bounds every message,
            which is dropped unread.

    Raises:
        ToolServerError: the server could not start, exited before it was ready, or did not
            answer within ``timeout``.
    """
    choice = _Choice(
        prefix or "",
        include,
        exclude,
        call_timeout,
        dict(tool_timeouts or {}),
        max_tool_pages,
        max_result_bytes,
    )
    with unwrap_single_exception():
        if isinstance(server, ClientSession):
            yield await _tools_of(server, server, choice, timeout)
            return
        async with open_session(server, timeout, max_result_bytes) as session:
            yield await _tools_of(session, server, choice, timeout)


@attrs.frozen
class _Choice:
    """Which tools of a server to offer, under which names, and how long a call may wait."""

    prefix: str
    include: Iterable[str] | None
    exclude: Iterable[str] | None
    call_timeout: float | None
    tool_timeouts: dict[str, float | None]
    max_tool_pages: int
    max_result_bytes: int | None

    def timeout_of(self, name: str) -> float | None:
        return self.tool_timeouts.get(name, self.call_timeout)


async def _tools_of(
    session: ClientSession,
    server: StdioServer | HttpServer | ClientSession,
    choice: _Choice,
    seconds: float,
) -> list[AgentTool]:
    name = describe(server)
    with startup_step(name, "list its tools", seconds):
        listed = await _list_all(session, choice.max_tool_pages)
    selected = select_tools(listed, choice.include, choice.exclude)
    if len(selected) > MANY_TOOLS:
        logger.warning(
            "MCP server %s offers %d tools (more than %d): the model is sent every one on every "
            "turn; choose some with include= or exclude=",
            name,
            len(selected),
            MANY_TOOLS,
        )
    return [
        agent_tool(
            session,
            tool,
            choice.prefix,
            name,
            choice.timeout_of(tool.name),
            choice.max_result_bytes,
        )
        for tool in selected
    ]


async def _list_all(session: ClientSession, max_pages: int) -> list[mcp_types.Tool]:
    """Every tool of the server, across at most ``max_pages`` pages.

    Raises:
        RuntimeError: the server sent more pages than that.
    """
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(max_pages):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise RuntimeError(f"it sent more than {max_pages} pages of tools/list")
