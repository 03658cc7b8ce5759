"""The stdio transport of an MCP session: a child process, one JSON-RPC message per line.

The SDK's own stdio client joins each chunk of a line to everything read of it before, which
costs time quadratic in the line's length, and keeps a line of any length. This one reads lines
in linear time and drops a message longer than the session's bound before it is ever parsed;
when the message is a response, its request gets an error saying so at once. Process handling
follows the MCP lifecycle: the child runs in its own session (process group); at the end its
stdin is closed, then the group gets SIGTERM, then SIGKILL, each after a grace period.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc
import mcp.types as mcp_types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from ..lowlevel import clip
from ._lines import LineSplitter, Oversized, request_id_of
from ._log import logger
from ._tools import TOO_LARGE, too_large_text

__all__ = ["stdio_transport"]

_CHUNK = 65536
_PREVIEW = 200
"""Characters of a dropped or unreadable message that its log line quotes."""
_GRACE = 2.0
"""Seconds the child has to exit after its stdin closes, and again after SIGTERM."""
_POLL = 0.01


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    *,
    name: str,
    max_message_bytes: int | None,
) -> AsyncIterator[tuple[Any, Any]]:
    """The session's read and write streams over a child process started from ``command``.

    ``name`` names the server in log lines; messages longer than ``max_message_bytes`` are
    dropped (``None``: no bound).
    """
    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | (env or {}),
        stderr=sys.stderr,
        cwd=cwd,
        start_new_session=True,  # its own process group, stopped as a whole
    )
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    reader = _Reader(process, to_session, name, max_message_bytes)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reader.run)
        tg.start_soon(_write, process, from_session, to_session)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()  # the reader drains the child's output from now on
                write_stream.close()
                await _stop(process)
            tg.cancel_scope.cancel()  # a survivor of the kill may hold the pipes open


class _Reader:
    """Reads the child's stdout into the session, message by message."""

    def __init__(
        self, process: anyio.abc.Process, to_session: Any, name: str, limit: int | None
    ) -> None:
        self._process = process
        self._to_session = to_session
        self._name = name
        self._limit = limit
        self._delivering = True  # until the session stops reading; then the rest is drained

    async def run(self) -> None:
        assert self._process.stdout is not None
        splitter = LineSplitter(self._limit)
        async with self._to_session:
            with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                while True:
                    chunk = await self._process.stdout.receive(_CHUNK)
                    for line in splitter.feed(chunk):
                        await self._deliver(line)

    async def _deliver(self, line: bytes | Oversized) -> None:
        item = self._parse(line) if isinstance(line, bytes) else self._refuse(line)
        if item is None or not self._delivering:
            return
        try:
            await self._to_session.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._delivering = False

    def _parse(self, line: bytes) -> SessionMessage | Exception | None:
        if not line.strip():
            return None
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            preview = clip(line.decode("utf-8", "replace"), _PREVIEW)
            logger.warning(
                "MCP server %s sent a line that is not JSON-RPC: %r", self._name, preview
            )
            return exc  # the session's own handling of an unreadable message
        return SessionMessage(message)

    def _refuse(self, line: Oversized) -> SessionMessage | None:
        """The error response standing for an oversized one, if its request can be named."""
        preview = clip(line.head.decode("utf-8", "replace"), _PREVIEW)
        logger.warning(
            "MCP server %s sent a message of %d bytes, more than max_result_bytes (%d); "
            "dropped it unread: %r",
            self._name,
            line.size,
            self._limit,
            preview,
        )
        request_id = request_id_of(line)
        if request_id is None:
            return None  # not a response, or one that cannot be placed: its call times out
        assert self._limit is not None  # only a bound makes a message oversized
        text = too_large_text(self._name, line.size, self._limit)
        error = mcp_types.ErrorData(code=TOO_LARGE, message=text)
        return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _write(process: anyio.abc.Process, from_session: Any, to_session: Any) -> None:
    """Writes the session's messages to the child's stdin, one line each."""
    assert process.stdin is not None
    try:
        async with from_session:
            async for message in from_session:
                json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(json.encode() + b"\n")
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The child stopped reading: end the session's reads too, or a request would wait on.
        await to_session.aclose()


async def _stop(process: anyio.abc.Process) -> None:
    """Closes the child's stdin, stops its process group, then closes its other pipes."""
    await _close(process.stdin)
    await _end(process)
    await _close(process.stdout)
    await _close(process.stderr)


async def _end(process: anyio.abc.Process) -> None:
    """Waits for the child to exit, sending SIGTERM then SIGKILL to its group after each grace
    period."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if await _exited(process, _GRACE):
            return
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)
    if not await _exited(process, _GRACE):
        logger.warning("MCP server process %d survived SIGKILL; left behind", process.pid)


async def _close(stream: anyio.abc.AsyncResource | None) -> None:
    if stream is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()


async def _exited(process: anyio.abc.Process, seconds: float) -> bool:
    """Whether the child exits within ``seconds``; polled, as waiting for it would also wait
    for its pipes, which a grandchild may hold open."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:  # noqa: ASYNC110  # no event says it exited
            await anyio.sleep(_POLL)
        return True
    return False
