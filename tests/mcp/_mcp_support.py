"""The MCP test server, started as users start servers: a child process over stdio or HTTP."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from pi_core.mcp import HttpServer, StdioServer

SERVER_SCRIPT = str(Path(__file__).with_name("mcp_test_server.py"))
HOSTILE_SCRIPT = str(Path(__file__).with_name("hostile_mcp_server.py"))
DEADLINE = 60.0
"""Seconds any single wait may take before a test fails (a hang guard, not a pace)."""


def stdio_server() -> StdioServer:
    """The test server as a child process speaking over its stdin and stdout."""
    return StdioServer(sys.executable, [SERVER_SCRIPT])


def hostile_server(fault: str, size: int = 0) -> StdioServer:
    """The misbehaving test server, whose ``hostile`` tool replies with ``fault``."""
    return StdioServer(sys.executable, [HOSTILE_SCRIPT, fault, str(size)])


@asynccontextmanager
async def http_server() -> AsyncIterator[HttpServer]:
    """The test server as a child process serving streamable HTTP on 127.0.0.1.

    The test binds and listens on the socket before the child starts, and hands it down: a
    client may connect at once (the connection waits in the backlog until the child accepts).
    The test keeps no copy of the socket, so when the child dies, connecting fails.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    fd = listener.fileno()
    command = [sys.executable, SERVER_SCRIPT, "--http-fd", str(fd)]
    try:
        process = await anyio.open_process(
            command, pass_fds=[fd], stdin=None, stdout=None, stderr=None
        )
    finally:
        listener.close()
    async with process:
        try:
            yield HttpServer(f"http://127.0.0.1:{port}/mcp")
        finally:
            if process.returncode is None:
                process.terminate()
            with anyio.fail_after(DEADLINE), anyio.CancelScope(shield=True):
                await process.wait()


@asynccontextmanager
async def serve_test_server(transport: str) -> AsyncIterator[StdioServer | HttpServer]:
    """The test server over ``transport`` (``"stdio"`` or ``"http"``)."""
    if transport == "stdio":
        yield stdio_server()
        return
    async with http_server() as server:
        yield server
