"""MCP tools as :class:`~pi_core.AgentTool`: schemas, calls, results, errors and progress."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import mcp.types as mcp_types
from mcp.shared.exceptions import MCPError

from mcp import ClientSession

from .._messages import ImageContent, TextContent
from .._tools import AgentTool, AgentToolResult, ToolUpdateCallback
from ..nursery import AbortSignal

__all__ = ["MCPToolError", "agent_tool", "select_tools"]

ResultContent = list[TextContent | ImageContent]


class MCPToolError(Exception):
    """A failed MCP call; the loop turns its text into the call's error result."""


def select_tools(
    tools: Iterable[mcp_types.Tool],
    include: Iterable[str] | None,
    exclude: Iterable[str] | None,
) -> list[mcp_types.Tool]:
    """The server's tools named by ``include`` (all when ``None``) and not by ``exclude``."""
    wanted = set(include) if include is not None else None
    unwanted = set(exclude) if exclude is not None else set()
    return [
        tool
        for tool in tools
        if (wanted is None or tool.name in wanted) and tool.name not in unwanted
    ]


def agent_tool(
    session: ClientSession, tool: mcp_types.Tool, prefix: str, server_name: str
) -> AgentTool:
    """An :class:`AgentTool` whose ``execute`` is a ``tools/call`` of ``tool`` on ``session``."""
    name = tool.name

    async def execute(
        tool_call_id: str, params: Any, signal: AbortSignal, on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        try:
            result = await session.call_tool(
                name, params, progress_callback=_progress_reporter(on_update)
            )
        except MCPError as exc:
            raise MCPToolError(f"MCP server {server_name} failed during {name}: {exc}") from exc
        return tool_result(result)

    return AgentTool(
        f"{prefix}{name}",
        tool.description or "",
        tool.input_schema,
        execute,
        label=tool.title or f"{prefix}{name}",
    )


def tool_result(result: mcp_types.CallToolResult) -> AgentToolResult:
    """A ``tools/call`` result as the tool's result; ``isError`` raises :class:`MCPToolError`.

    Raises:
        MCPToolError: the server reported the call as failed; its text blocks, joined by
            newlines, are the message.
    """
    content = [_block(block) for block in result.content]
    if result.is_error:
        texts = [block.text for block in content if isinstance(block, TextContent)]
        raise MCPToolError("\n".join(texts) or "The MCP tool reported an error")
    return AgentToolResult(content, result.structured_content)


def _block(block: Any) -> TextContent | ImageContent:
    if isinstance(block, mcp_types.TextContent):
        return TextContent(block.text)
    if isinstance(block, mcp_types.ImageContent):
        return ImageContent(block.data, block.mime_type)
    return TextContent(f"[{block.type}: {_locator(block)}]")


def _locator(block: Any) -> str:
    """The URI of a resource (embedded or linked), else the MIME type of the content."""
    resource = getattr(block, "resource", None)
    uri = getattr(resource, "uri", None) or getattr(block, "uri", None)
    if uri is not None:
        return str(uri)
    return str(getattr(block, "mime_type", None) or "unknown")


def _progress_reporter(on_update: ToolUpdateCallback) -> Callable[..., Any]:
    """The SDK's progress callback, reporting each notification as a partial result."""

    async def report(progress: float, total: float | None, message: str | None) -> None:
        text = message if message else (f"{progress:g}/{total:g}" if total else f"{progress:g}")
        details = {"progress": progress, "total": total, "message": message}
        on_update(AgentToolResult([TextContent(text)], details))

    return report
