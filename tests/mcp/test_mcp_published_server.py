"""A published MCP server from PyPI, ``mcp-server-time``, run over stdio as a user runs it."""

from __future__ import annotations

import shutil
import sys
from datetime import datetime
from pathlib import Path

import anyio
import pytest
from _mcp_support import DEADLINE

from pi_core import AbortSignal, Agent, AgentToolResult, TextContent, ToolResultMessage
from pi_core.mcp import StdioServer, mcp_tools
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import check_transcript

pytestmark = pytest.mark.anyio


def console_script() -> StdioServer:
    """``mcp-server-time --local-timezone UTC``: the console script its package installs."""
    # Installed next to this interpreter (a virtual environment's bin/) or on PATH.
    beside = Path(sys.executable).with_name("mcp-server-time")
    script = str(beside) if beside.exists() else shutil.which("mcp-server-time")
    assert script is not None, "mcp-server-time is not installed"
    return StdioServer(script, ["--local-timezone", "UTC"])


def module() -> StdioServer:
    """``python -m mcp_server_time``."""
    return StdioServer(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])


async def test_an_agent_asks_the_time_server_for_the_time_in_two_zones() -> None:
    provider = FauxProvider()
    provider.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("time_get_current_time", {"timezone": "Asia/Tokyo"}, id="t1"),
                    faux_tool_call(
                        "time_convert_time",
                        {
                            "source_timezone": "UTC",
                            "time": "12:00",
                            "target_timezone": "Asia/Tokyo",
                        },
                        id="t2",
                    ),
                    faux_tool_call("time_get_current_time", {"timezone": "Mars/Olympus"}, id="t3"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("It is evening in Tokyo."),
        ]
    )
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(console_script(), prefix="time_") as tools:
            agent = Agent(model=provider.get_model(), stream_fn=provider.stream, tools=tools)
            await agent.prompt("What time is it in Tokyo?")
    results = {m.tool_call_id: m for m in agent.state.messages if isinstance(m, ToolResultMessage)}
    now = results["t1"].details
    assert now["timezone"] == "Asia/Tokyo"
    offset = datetime.fromisoformat(now["datetime"]).utcoffset()
    assert offset is not None and offset.total_seconds() == 9 * 3600
    assert results["t2"].details["target"]["datetime"].endswith("T21:00:00+09:00")
    assert results["t3"].is_error
    assert "Invalid timezone" in results["t3"].content[0].text  # type: ignore[union-attr]
    assert agent.state.messages[-1].content == [TextContent("It is evening in Tokyo.")]  # type: ignore[union-attr]
    check_transcript(agent.state.messages)


async def test_the_time_server_runs_as_a_python_module_too() -> None:
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(module(), include=["get_current_time"]) as tools:
            [tool] = tools
            result = await tool.execute("a", {"timezone": "UTC"}, AbortSignal(), _ignore)
    assert isinstance(result, AgentToolResult)
    assert tool.name == "get_current_time"
    assert "timezone" in tool.parameters["properties"]
    assert result.details["timezone"] == "UTC"


def _ignore(_partial: object) -> None:
    pass
