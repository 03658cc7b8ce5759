"""MCP servers as tools, against real servers: the test server (written with the SDK's server
side) as a child process over stdio and over streamable HTTP on 127.0.0.1, on both backends."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from _mcp_support import DEADLINE, serve_test_server, stdio_server
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession, StdioServerParameters, stdio_client
from pi_core import (
    AbortSignal,
    Agent,
    AgentEvent,
    ImageContent,
    TextContent,
    ToolExecutionUpdate,
    ToolResultMessage,
)
from pi_core.mcp import HttpServer, StdioServer, ToolServerError, mcp_tools
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar, check_transcript

pytestmark = [
    pytest.mark.anyio,
    # The SDK's HTTP client (httpx2) leaves the async generators of a response stream it
    # abandons (an SSE stream cut by the session's end) to the garbage collector; trio reports
    # each one. Their names vary with the httpx2 version.
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <async_generator object "
        r"(\w+\.__aiter__|Response\.aiter_\w+) :pytest.PytestUnraisableExceptionWarning"
    ),
]

TRANSPORTS = ["stdio", "http"]


@pytest.fixture(params=TRANSPORTS)
async def server(request: pytest.FixtureRequest) -> AsyncIterator[StdioServer | HttpServer]:
    async with serve_test_server(request.param) as running:
        yield running


def agent_calling(*calls: tuple[str, dict[str, Any]], tools: list[Any]) -> Agent:
    """An agent whose model calls ``calls`` in one parallel batch, then says ``done``."""
    provider = FauxProvider()
    blocks = [faux_tool_call(name, args, id=f"c{i}") for i, (name, args) in enumerate(calls)]
    provider.set_responses(
        [faux_assistant_message(blocks, stop_reason="toolUse"), faux_assistant_message("done")]
    )
    return Agent(model=provider.get_model(), stream_fn=provider.stream, tools=tools)


def results_by_id(agent: Agent) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in agent.state.messages if isinstance(m, ToolResultMessage)}


def by_name(tools: list[Any]) -> dict[str, Any]:
    return {tool.name: tool for tool in tools}


async def test_tools_carry_the_servers_names_descriptions_and_schemas(
    server: StdioServer | HttpServer,
) -> None:
    # An open session of the caller's (made with the SDK alone) serves several blocks and stays
    # open after them; prefix, include and exclude name the server's own tools.
    with anyio.fail_after(DEADLINE):
        async with sdk_session(server) as session:
            async with mcp_tools(session) as tools:
                add = by_name(tools)["add"]
            async with mcp_tools(session, prefix="t_", include=["echo", "add", "fail"]) as some:
                echo = by_name(some)["t_echo"]
                echoed = await echo.execute("a", {"text": "one"}, AbortSignal(), print)
            async with mcp_tools(session, exclude=["crash", "slow"]) as rest:
                rest_names = {tool.name for tool in rest}
            # Last, as it kills the server: errors name the server as it named itself.
            async with mcp_tools(session, include=["crash"]) as [crash]:
                with pytest.raises(Exception) as crashed:  # noqa: PT011  # the loop's error result
                    await crash.execute("c", {}, AbortSignal(), print)
    assert {"echo", "add", "slow", "fail", "picture", "weather", "crash"} <= set(by_name(tools))
    assert add.description == "Add two integers."
    assert add.parameters["required"] == ["a", "b"]
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert sorted(by_name(some)) == ["t_add", "t_echo", "t_fail"]
    assert echoed.content == [TextContent("one")]
    assert "crash" not in rest_names and "slow" not in rest_names and "echo" in rest_names
    assert str(crashed.value).startswith(
        "MCP server pi-core-test-server (an open session) failed during crash: "
    )


@asynccontextmanager
async def sdk_session(server: StdioServer | HttpServer) -> AsyncIterator[ClientSession]:
    """A session opened with the SDK alone, as an application that has one would."""
    if isinstance(server, StdioServer):
        parameters = StdioServerParameters(command=server.command, args=list(server.args))
        transport: Any = stdio_client(parameters)
    else:
        transport = streamable_http_client(server.url)
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_parallel_calls_share_one_session_and_map_every_kind_of_result(
    server: StdioServer | HttpServer,
) -> None:
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(server) as tools:
            agent = agent_calling(
                ("add", {"a": "2", "b": 3}),  # validated and coerced by pi_core first
                ("echo", {"text": "hello"}),
                ("picture", {}),
                ("document", {}),
                ("weather", {"city": "Oslo"}),
                ("fail", {"reason": "no such file"}),
                ("add", {"a": "two"}),  # invalid: never reaches the server
                tools=tools,
            )
            await agent.prompt("go")
    results = results_by_id(agent)
    assert results["c0"].content == [TextContent("5")] and not results["c0"].is_error
    assert results["c1"].content == [TextContent("hello")]
    caption, image = results["c2"].content
    assert caption == TextContent("a pixel")
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert results["c3"].content == [TextContent("[resource: file:///notes.txt]")]
    assert results["c4"].details == {"city": "Oslo", "celsius": 21.5}
    assert results["c5"].is_error
    assert results["c5"].content == [TextContent("Error executing tool fail: no such file")]
    assert results["c6"].is_error
    assert results["c6"].content[0].text.startswith('Validation failed for tool "add"')  # type: ignore[union-attr]
    assert agent.state.messages[-1].content == [TextContent("done")]  # type: ignore[union-attr]
    check_transcript(agent.state.messages)


async def test_progress_reaches_on_update_and_abort_cancels_the_request(
    server: StdioServer | HttpServer,
) -> None:
    events: list[AgentEvent] = []
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(server) as tools:
            agent = agent_calling(("slow", {}), tools=tools)

            def listener(event: AgentEvent, _signal: AbortSignal) -> None:
                events.append(event)
                if isinstance(event, ToolExecutionUpdate):
                    agent.abort()  # the server is inside the call now: it reported progress

            agent.subscribe(listener)
            await agent.prompt("go")
            # The server's own record: its handler of ``slow`` was cancelled by the request's
            # notifications/cancelled, not merely abandoned by the client.
            seen = await by_name(tools)["cancellations"].execute("x", {}, AbortSignal(), print)
    [update] = [e for e in events if isinstance(e, ToolExecutionUpdate)]
    assert update.partial_result.content == [TextContent("started")]
    assert update.partial_result.details == {"progress": 1, "total": 10, "message": "started"}
    [result] = results_by_id(agent).values()
    assert result.is_error and result.content == [TextContent("Operation aborted")]
    assert seen.content == [TextContent("slow was cancelled")]
    check_event_grammar(events)


async def test_a_server_that_dies_mid_call_fails_that_call_and_the_run_goes_on(
    server: StdioServer | HttpServer,
) -> None:
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(server) as tools:
            agent = agent_calling(("crash", {}), tools=tools)
            await agent.prompt("go")
            # Later calls on the dead server fail too, each as its own error result.
            again = agent_calling(("echo", {"text": "anyone?"}), tools=tools)
            await again.prompt("go")
    [crashed] = results_by_id(agent).values()
    assert crashed.is_error
    text = crashed.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"MCP server {_name(server)} failed during crash: ")
    assert agent.state.messages[-1].content == [TextContent("done")]  # type: ignore[union-attr]
    [later] = results_by_id(again).values()
    assert later.is_error
    assert later.content[0].text.startswith(f"MCP server {_name(server)} failed during echo")  # type: ignore[union-attr]
    assert again.state.messages[-1].content == [TextContent("done")]  # type: ignore[union-attr]


async def test_a_result_larger_than_the_cap_is_an_error_result_saying_so(
    server: StdioServer | HttpServer,
) -> None:
    with anyio.fail_after(DEADLINE):
        async with mcp_tools(server, max_result_bytes=4000) as tools:
            agent = agent_calling(("big", {"size": 5000}), ("big", {"size": 3000}), tools=tools)
            await agent.prompt("go")
    results = results_by_id(agent)
    assert results["c0"].is_error
    text = results["c0"].content[0].text  # type: ignore[union-attr]
    # Over stdio the whole message is measured as it arrives, over HTTP the result's text.
    assert text.startswith(f"MCP server {_name(server)} sent a result of ")
    assert text.endswith(" bytes, more than max_result_bytes (4000)")
    assert int(text.split(" sent a result of ")[1].split()[0]) >= 5000
    assert results["c1"].content == [TextContent("x" * 3000)]


def _name(server: StdioServer | HttpServer) -> str:
    if isinstance(server, HttpServer):
        return server.url
    return " ".join([server.command, *server.args])


async def test_a_command_that_does_not_exist_raises_tool_server_error() -> None:
    with anyio.fail_after(DEADLINE), pytest.raises(ToolServerError) as raised:
        async with mcp_tools(StdioServer("/nonexistent/mcp-server", ["--flag", "a b"])):
            pass
    assert "/nonexistent/mcp-server --flag 'a b'" in str(raised.value)


async def test_a_server_that_exits_before_it_is_ready_raises_tool_server_error() -> None:
    with anyio.fail_after(DEADLINE), pytest.raises(ToolServerError) as raised:
        async with mcp_tools(StdioServer(sys.executable, ["-c", "raise SystemExit(2)"])):
            pass
    assert f"{sys.executable} -c 'raise SystemExit(2)'" in str(raised.value)


async def test_a_server_that_never_answers_initialize_raises_after_the_timeout() -> None:
    silent = StdioServer(sys.executable, ["-c", "import sys; sys.stdin.read()"])
    with anyio.fail_after(DEADLINE), pytest.raises(ToolServerError) as raised:
        async with mcp_tools(silent, timeout=0.5):
            pass
    assert str(raised.value) == (
        f"MCP server {sys.executable} -c 'import sys; sys.stdin.read()' "
        "did not answer initialize within 0.5 s"
    )


async def test_an_unreachable_url_raises_tool_server_error() -> None:
    # Nothing listens on the port of a socket that was bound and closed.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"
    with anyio.fail_after(DEADLINE), pytest.raises(ToolServerError) as raised:
        async with mcp_tools(HttpServer(url)):
            pass
    assert url in str(raised.value)


async def test_an_error_inside_the_block_propagates_as_itself() -> None:
    with anyio.fail_after(DEADLINE), pytest.raises(KeyError):
        async with mcp_tools(stdio_server()):
            raise KeyError("mine")
