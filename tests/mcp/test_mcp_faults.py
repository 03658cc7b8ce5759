"""MCP servers that misbehave, as real child processes: broken replies, no replies, huge
replies, endless listings. Each fault ends one call (or the start) with a clear error; the
session stays usable."""

from __future__ import annotations

import json
import logging
import shlex
from typing import Any

import anyio
import pytest
from _mcp_support import DEADLINE, hostile_server
from hostile_mcp_server import text_result

from pi_core import Agent, TextContent, ToolResultMessage
from pi_core.mcp import StdioServer, ToolServerError, mcp_tools
from pi_core.mcp._connect import MANY_TOOLS
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

pytestmark = pytest.mark.anyio


def agent_calling(name: str, tools: list[Any]) -> Agent:
    """An agent whose model calls ``name`` once, then says ``done``."""
    provider = FauxProvider()
    call = faux_tool_call(name, {"text": "hi"}, id="c")
    provider.set_responses(
        [faux_assistant_message([call], stop_reason="toolUse"), faux_assistant_message("done")]
    )
    return Agent(model=provider.get_model(), stream_fn=provider.stream, tools=tools)


async def call_once(name: str, tools: list[Any]) -> ToolResultMessage:
    """The result of one call of ``name`` made by a run, which must end normally."""
    agent = agent_calling(name, tools)
    await agent.prompt("go")
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert agent.state.messages[-1].content == [TextContent("done")]  # type: ignore[union-attr]
    return result


def command_of(server: StdioServer) -> str:
    return shlex.join([server.command, *server.args])


@pytest.mark.parametrize("fault", ["truncated", "not-jsonrpc", "wrong-id", "silent"])
async def test_a_reply_that_never_comes_ends_the_call_at_the_call_timeout(fault: str) -> None:
    server = hostile_server(fault)
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(server, call_timeout=0.5) as tools:
            failed = await call_once("hostile", tools)
            after = await call_once("echo", tools)  # the same session, still usable
    assert failed.is_error
    assert failed.content == [
        TextContent(f"MCP server {command_of(server)} did not answer hostile within 0.5 s")
    ]
    assert not after.is_error and after.content == [TextContent("hi")]


async def test_a_timeout_for_one_tool_overrides_the_servers() -> None:
    server = hostile_server("silent")
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(server, call_timeout=None, tool_timeouts={"hostile": 0.25}) as tools:
            failed = await call_once("hostile", tools)
    assert failed.content == [
        TextContent(f"MCP server {command_of(server)} did not answer hostile within 0.25 s")
    ]


async def test_an_error_result_of_the_server_is_logged_once_at_debug_as_a_preview(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The server's isError result is its own outcome, not a failure of pi_core: the model gets
    # the whole text; the log gets one line with its start, and no traceback.
    caplog.set_level(logging.DEBUG, logger="pi_core")
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(hostile_server("huge-error", 100_000)) as tools:
            failed = await call_once("hostile", tools)
    assert failed.is_error and failed.content == [TextContent("e" * 100_000)]
    [record] = [r for r in caplog.records if r.name == "pi_core"]
    assert record.levelno == logging.DEBUG and record.exc_info is None
    assert record.getMessage() == f"Tool hostile reported an error (call c): '{'e' * 199}…'"


async def test_endless_pages_of_tools_fail_the_start_with_a_clear_error() -> None:
    server = hostile_server("endless-pages")
    with anyio.fail_after(DEADLINE), pytest.raises(ToolServerError) as raised:
        async with mcp_tools(server, max_tool_pages=20):
            pass
    assert str(raised.value) == (
        f"MCP server {command_of(server)} failed to list its tools: "
        "it sent more than 20 pages of tools/list"
    )


async def test_more_tools_than_the_threshold_are_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    few = hostile_server("many-tools", MANY_TOOLS - 2)  # with echo and hostile: at the threshold
    many = hostile_server("many-tools", 1000)
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(few) as at_threshold, mcp_tools(many) as above:
            pass
    assert len(at_threshold) == MANY_TOOLS and len(above) == 1002
    [record] = [r for r in caplog.records if r.name == "pi_core.mcp"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"MCP server {command_of(many)} offers 1002 tools (more than {MANY_TOOLS}): the model "
        "is sent every one on every turn; choose some with include= or exclude="
    )


@pytest.mark.parametrize("fault", ["huge", "huge-id-last"])
async def test_a_message_larger_than_the_cap_is_dropped_unread_and_its_call_fails_at_once(
    fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    # No call timeout: the error must come from the dropped message itself, placed by its id.
    server = hostile_server(fault, 1024 * 1024)
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(server, call_timeout=None, max_result_bytes=65536) as tools:
            failed = await call_once("hostile", tools)
            after = await call_once("echo", tools)
    size = len(json.dumps({"jsonrpc": "2.0", "id": 2, "result": text_result("x" * 1024 * 1024)}))
    name = command_of(server)
    assert failed.content == [
        TextContent(
            f"MCP server {name} sent a result of {size} bytes, more than max_result_bytes (65536)"
        )
    ]
    assert after.content == [TextContent("hi")]
    # Logged once, as a preview: not the megabyte. (On a loaded machine the loop's own blocking
    # watch may also warn about a slow step; only the MCP client's warnings are counted here.)
    [warning] = [
        r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "pi_core.mcp"
    ]
    message = warning.getMessage()
    assert message.startswith(
        f"MCP server {name} sent a message of {size} bytes, more than max_result_bytes (65536)"
    )
    assert len(message) < 1000
