"""The demo's built-in tools, safe by construction.

``calculate`` evaluates arithmetic only; ``read_file`` and ``list_dir`` see nothing outside one
root directory (symlinks resolved first); ``now`` reads the clock; ``sleep`` waits a bounded
time, reporting progress, and stops at once when the run is aborted.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import anyio
import anyio.to_thread

from .. import AgentTool, AgentToolResult, TextContent, ToolUpdateCallback, tool
from ..nursery import AbortSignal
from ._calc import calculate as evaluate

__all__ = [
    "MAX_LIST_ENTRIES",
    "MAX_READ_BYTES",
    "MAX_SLEEP_SECONDS",
    "PathEscapeError",
    "Workspace",
    "make_demo_tools",
]

MAX_READ_BYTES = 64 * 1024
MAX_LIST_ENTRIES = 200
MAX_SLEEP_SECONDS = 60.0
_SLEEP_STEP = (0.25, 1.0)
"""``sleep`` reports progress every quarter of its time, but within these bounds (seconds)."""


class PathEscapeError(ValueError):
    """A path resolves outside the workspace root."""


class Workspace:
    """A directory the file tools are confined to."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (relative to the root), symlinks followed.

        Raises:
            PathEscapeError: the real path is not inside the root.
        """
        candidate = (self.root / path).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            raise PathEscapeError(f"{path!r} is outside the working directory")
        return candidate

    def read_text(self, path: str) -> str:
        """Up to :data:`MAX_READ_BYTES` of a file, decoded as UTF-8 (bad bytes replaced)."""
        target = self.resolve(path)
        if not target.is_file():
            raise FileNotFoundError(f"{path!r} is not a file")
        with target.open("rb") as file:
            data = file.read(MAX_READ_BYTES + 1)
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_READ_BYTES:
            text += f"\n[truncated after {MAX_READ_BYTES} bytes]"
        return text

    def list_dir(self, path: str) -> str:
        """The sorted entries of a directory, one a line, directories ending with ``/``."""
        target = self.resolve(path)
        if not target.is_dir():
            raise NotADirectoryError(f"{path!r} is not a directory")
        entries = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in target.iterdir())
        shown = entries[:MAX_LIST_ENTRIES]
        if len(entries) > MAX_LIST_ENTRIES:
            shown.append(f"[{len(entries) - MAX_LIST_ENTRIES} more]")
        return "\n".join(shown) if shown else "(empty directory)"


def make_demo_tools(root: str | os.PathLike[str] = ".") -> list[AgentTool]:
    """The built-in tools; the file tools are confined to ``root``."""
    read_file, list_dir = _file_tools(Workspace(root))
    return [calculate, read_file, list_dir, now, sleep]


@tool
async def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / // % **, parentheses.

    Args:
        expression: for example ``(2 + 3) * 4 ** 2``.
    """
    return f"{expression} = {evaluate(expression)}"


@tool
async def now() -> str:
    """The current local date and time, ISO 8601 with the UTC offset."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


@tool
async def sleep(
    seconds: float, *, signal: AbortSignal, on_update: ToolUpdateCallback
) -> AgentToolResult:
    """Wait a number of seconds (0 to 60), reporting progress; an abort stops it at once.

    Args:
        seconds: how long to wait.
    """
    return await _sleep(seconds, signal, on_update)


def _file_tools(workspace: Workspace) -> tuple[AgentTool, AgentTool]:
    @tool
    async def read_file(path: str) -> str:
        """Read a text file inside the working directory (at most 64 KiB).

        Args:
            path: relative to the working directory.
        """
        # File system calls block; a worker thread keeps the event loop responsive.
        return await anyio.to_thread.run_sync(workspace.read_text, path)

    @tool
    async def list_dir(path: str = ".") -> str:
        """List a directory inside the working directory.

        Args:
            path: relative to the working directory.
        """
        return await anyio.to_thread.run_sync(workspace.list_dir, path)

    return read_file, list_dir


async def _sleep(
    seconds: float, signal: AbortSignal, on_update: ToolUpdateCallback
) -> AgentToolResult:
    if not 0 <= seconds <= MAX_SLEEP_SECONDS:
        raise ValueError(f"seconds must be between 0 and {MAX_SLEEP_SECONDS:g}, got {seconds:g}")
    step = min(max(seconds / 4, _SLEEP_STEP[0]), _SLEEP_STEP[1])
    waited = 0.0
    # The loop cancels a running tool on abort anyway; the scope makes the tool's own contract
    # explicit, so it behaves the same when called outside a run.
    with signal.scope():
        while waited < seconds:
            delay = min(step, seconds - waited)
            await anyio.sleep(delay)
            waited += delay
            if waited < seconds:
                on_update(_text_result(f"{waited:.2f} / {seconds:g} s"))
    if signal.aborted:
        raise RuntimeError(f"sleep aborted after {waited:.2f} s")
    return AgentToolResult([TextContent(f"slept {seconds:g} s")], details={"seconds": seconds})


def _text_result(text: str) -> AgentToolResult:
    return AgentToolResult([TextContent(text)])
