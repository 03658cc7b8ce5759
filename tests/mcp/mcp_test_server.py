"""An MCP server for the tests, written with the SDK's server side.

``python mcp_test_server.py`` serves it over stdio; ``python mcp_test_server.py --http-fd FD``
serves it over streamable HTTP on an already listening socket that the test passed down.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import EmbeddedResource, TextResourceContents
from typing_extensions import TypedDict

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG."""

server = MCPServer("pi-core-test-server")
_cancelled = anyio.Event()


class Weather(TypedDict):
    city: str
    celsius: float


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text as it came."""
    return text


@server.tool(structured_output=False)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
async def slow(ctx: Context) -> str:
    """Report progress, then wait until cancelled."""
    await ctx.report_progress(1, 10, "started")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        _cancelled.set()
        raise
    return "never"


@server.tool()
async def cancellations() -> str:
    """Wait until a call of ``slow`` was cancelled by the client, then say so."""
    with anyio.fail_after(20):
        await _cancelled.wait()
    return "slow was cancelled"


@server.tool()
def fail(reason: str) -> str:
    """Always fail, with ``reason`` as the error."""
    raise ToolError(reason)


@server.tool(structured_output=False)
def picture() -> list[Any]:
    """A caption and a PNG image."""
    return ["a pixel", Image(data=PIXEL, format="png").to_image_content()]


@server.tool(structured_output=False)
def document() -> list[Any]:
    """An embedded text resource."""
    contents = TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="hi")
    return [EmbeddedResource(type="resource", resource=contents)]


@server.tool()
def weather(city: str) -> Weather:
    """Structured weather of a city."""
    return Weather(city=city, celsius=21.5)


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool(structured_output=False)
def big(size: int) -> str:
    """A text of ``size`` characters."""
    return "x" * size


async def _serve_http(fd: int) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{fd}"]
    await serve(server.streamable_http_app(), config)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http-fd", type=int, default=None)
    args = parser.parse_args()
    if args.http_fd is None:
        server.run()
    else:
        socket.socket(fileno=args.http_fd).detach()  # a check that the fd is a socket
        anyio.run(_serve_http, args.http_fd)


if __name__ == "__main__":
    main()
