"""``--mcp`` / ``--mcp-url``: the tools of MCP servers, for as long as a command runs."""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from .. import AgentTool
from ..lowlevel import install_hint
from ._setup import AgentSettings, UsageError

__all__ = ["open_mcp_tools"]


@asynccontextmanager
async def open_mcp_tools(settings: AgentSettings) -> AsyncIterator[list[list[AgentTool]]]:
    """The tools of each server the settings name (a list per server), their sessions open
    for the block.

    Raises:
        UsageError: the ``mcp`` extra is missing, a command line is empty, or a server cannot
            be used (its message names the command line or URL).
    """
    if not settings.mcp and not settings.mcp_urls:
        yield []
        return
    try:
        from ..mcp import HttpServer, StdioServer, ToolServerError, mcp_tools
    except ImportError:
        raise UsageError(f"--mcp and --mcp-url need the mcp extra: {install_hint('mcp')}") from None
    servers: list[StdioServer | HttpServer] = [
        StdioServer(*_split(command)) for command in settings.mcp
    ]
    servers.extend(HttpServer(url) for url in settings.mcp_urls)
    tools: list[list[AgentTool]] = []
    async with AsyncExitStack() as stack:
        for server in servers:
            try:
                tools.append(await stack.enter_async_context(mcp_tools(server)))
            except ToolServerError as exc:
                raise UsageError(str(exc)) from exc
        yield tools


def _split(command_line: str) -> tuple[str, list[str]]:
    """A command line as the command and its arguments, split as a POSIX shell would."""
    parts = shlex.split(command_line)
    if not parts:
        raise UsageError("--mcp needs a command line, such as --mcp 'uvx mcp-server-time'")
    return parts[0], parts[1:]
