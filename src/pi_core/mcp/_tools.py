"""MCP tools as :class:`~pi_core.AgentTool`: schemas, calls, results, errors and progress."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import mcp.types as mcp_types
from mcp.shared.exceptions import MCPError

from mcp import ClientSession

from .. import (
    AgentTool,
    AgentToolResult,
    ImageContent,
    PiCoreError,
    TextContent,
    ToolUpdateCallback,
)
from ..lowlevel import ReportedToolError
from ..nursery import AbortSignal

__all__ = ["TOO_LARGE", "MCPToolError", "agent_tool", "select_tools", "too_large_text"]

ResultContent = list[TextContent | ImageContent]

_SESSION_FAULTS = frozenset({mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT})
"""The SDK's codes of a call that got no answer; any other code is the server's own error reply."""

TOO_LARGE = -32099
"""The code of the error response that stands for a response too large to take (a JSON-RPC
implementation-defined server error)."""


class MCPToolError(PiCoreError):
    """Raised by an MCP tool's ``execute`` for a failed call: the server's ``isError`` result or
    a request that failed. In a run the loop turns its text into the call's error result."""


class MCPReportedError(MCPToolError, ReportedToolError):
    """The server answered the call with an error (``isError``, or a JSON-RPC error): the
    server's own outcome, which the loop logs at DEBUG only."""


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
    session: ClientSession,
    tool: mcp_types.Tool,
    prefix: str,
    server_name: str,
    timeout: float | None,
    max_result_bytes: int | None,
) -> AgentTool:
    """An :class:`AgentTool` whose ``execute`` is a ``tools/call`` of ``tool`` on ``session``,
    waiting at most ``timeout`` seconds for the answer and taking a result of at most
    ``max_result_bytes`` (``None``: without a bound)."""
    name = tool.name

    async def execute(
        tool_call_id: str, params: Any, signal: AbortSignal, on_update: ToolUpdateCallback
    ) -> AgentToolResult:
        try:
            result = await session.call_tool(
                name,
                params,
                read_timeout_seconds=timeout,
                progress_callback=_progress_reporter(on_update),
            )
        except MCPError as exc:
            raise _call_error(exc, server_name, name, timeout) from exc
        if max_result_bytes is not None and (size := _size(result)) > max_result_bytes:
            raise MCPToolError(too_large_text(server_name, size, max_result_bytes))
        return tool_result(result)

    return AgentTool(
        f"{prefix}{name}",
        tool.description or "",
        tool.input_schema,
        execute,
        label=tool.title or f"{prefix}{name}",
    )


def _call_error(exc: MCPError, server_name: str, name: str, timeout: float | None) -> MCPToolError:
    """The error of a ``tools/call`` that got no result: a timeout, a lost server, an error reply."""
    if exc.code == TOO_LARGE:  # made up by the transport, which logged it
        return MCPReportedError(exc.error.message)
    if exc.code == mcp_types.REQUEST_TIMEOUT and timeout is not None:
        # The SDK has sent the server notifications/cancelled; the session stays usable.
        return MCPToolError(f"MCP server {server_name} did not answer {name} within {timeout:g} s")
    text = f"MCP server {server_name} failed during {name}: {exc}"
    return MCPToolError(text) if exc.code in _SESSION_FAULTS else MCPReportedError(text)


def too_large_text(server_name: str, size: int, limit: int) -> str:
    """The error of a call whose result is larger than ``max_result_bytes``."""
    return (
        f"MCP server {server_name} sent a result of {size} bytes, more than "
        f"max_result_bytes ({limit})"
    )


def _size(result: mcp_types.CallToolResult) -> int:
    """About the bytes of a result's text and data: what a model would be sent."""
    return sum(
        len(getattr(block, "text", "") or "") + len(getattr(block, "data", "") or "")
        for block in result.content
    )


def tool_result(result: mcp_types.CallToolResult) -> AgentToolResult:
    """A ``tools/call`` result as the tool's result; ``isError`` raises :class:`MCPReportedError`.

    Raises:
        MCPReportedError: the server reported the call as failed; its text blocks, joined by
            newlines, are the message.
    """
    content = [_block(block) for block in result.content]
    if result.is_error:
        texts = [block.text for block in content if isinstance(block, TextContent)]
        raise MCPReportedError("\n".join(texts) or "The MCP tool reported an error")
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
