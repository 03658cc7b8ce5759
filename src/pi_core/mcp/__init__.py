"""Tools from Model Context Protocol servers, on the official ``mcp`` SDK (the ``mcp`` extra).

>>> async with mcp_tools(StdioServer("uvx", ["mcp-server-time"])) as tools:  # doctest: +SKIP
...     agent = Agent(model=..., tools=tools)
...     await agent.prompt("What time is it in Tokyo?")

Every tool of the server becomes an :class:`~pi_core.AgentTool`. One session serves every call
made inside the block, parallel calls included; it closes (and a child process is stopped) when
the block exits. The SDK runs on anyio, so this works on trio and on asyncio.
"""

from __future__ import annotations

from .._public import publish_module_names
from ._connect import mcp_tools
from ._servers import HttpServer, StdioServer, ToolServerError
from ._tools import MCPToolError

__all__ = ("HttpServer", "MCPToolError", "StdioServer", "ToolServerError", "mcp_tools")

publish_module_names(globals(), __all__, __name__)
