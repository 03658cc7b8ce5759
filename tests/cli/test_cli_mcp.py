"""``--mcp`` and ``--mcp-url`` end to end: real MCP servers' tools join the CLI's agent."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys

import anyio
import anyio.to_thread
import pytest
from _cli_process import run_cli
from _mcp_support import SERVER_SCRIPT, http_server

HEADER = (
    "pi-core · pi-demo (built-in demo model) · tools: calculate, read_file, list_dir, now, sleep"
)


def test_run_adds_the_tools_of_each_mcp_server() -> None:
    # On trio: the MCP module's own tests cover both backends; the CLI's wiring is the same.
    backend = "trio" if importlib.util.find_spec("trio") else "asyncio"
    done = run_cli(
        "run",
        "--backend",
        backend,
        "--mcp",
        f"{sys.executable} {SERVER_SCRIPT}",
        "--mcp",
        f"{sys.executable} -m mcp_server_time --local-timezone UTC",
        "What is 2 + 3?",
    )
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[0]
    assert header.startswith(HEADER + ", echo, add, slow, ")
    assert header.endswith(", get_current_time, convert_time, research")
    assert " answered: " not in done.stdout  # the prompt did not ask for the MCP tools


def test_the_demo_model_calls_the_first_tool_of_each_server_when_asked_to() -> None:
    # JSON lines: the demo does not pace them, and the report is read from the last event.
    done = run_cli(
        "run",
        "--json",
        "--mcp",
        f"{sys.executable} {SERVER_SCRIPT}",
        "--mcp",
        f"{sys.executable} -m mcp_server_time --local-timezone UTC",
        "Call the MCP tools, sleep 0",
    )
    assert done.returncode == 0, done.stderr
    end = json.loads(done.stdout.splitlines()[-1])
    assert end["type"] == "agent_end"
    report = end["messages"][-1]["content"][-1]["text"].splitlines()
    # Arguments made up from each schema: a plain string, and the example a description quotes.
    assert "- echo answered: demo" in report
    [time] = [line for line in report if line.startswith("- get_current_time answered: ")]
    assert '"timezone": "America/New_York"' in time


def test_a_server_that_cannot_start_is_a_usage_error() -> None:
    done = run_cli("run", "--mcp", "/nonexistent/server --port 1", "hi")
    assert done.returncode == 2
    assert "pi-core: error: MCP server /nonexistent/server --port 1 failed to start" in done.stderr


def test_an_empty_mcp_command_line_is_a_usage_error() -> None:
    done = run_cli("chat", "--mcp", " ", stdin="")
    assert done.returncode == 2
    assert "--mcp needs a command line" in done.stderr


@pytest.mark.anyio
async def test_chat_adds_the_tools_of_a_streamable_http_server() -> None:
    with anyio.fail_after(120):
        async with http_server() as server:
            run = functools.partial(run_cli, "chat", "--mcp-url", server.url, stdin="hello\n")
            done = await anyio.to_thread.run_sync(run)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(HEADER + ", echo, add, slow, ")
