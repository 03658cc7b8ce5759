"""The input line of ``pi-core chat`` on a terminal, with prompt_toolkit (the ``chat`` extra).

The prompt runs in a thread of its own, on any backend (prompt_toolkit brings its own asyncio
loop there): lines, Ctrl-C and Ctrl-D reach the chat through the same memory stream as the plain
reader's. ``patch_stdout`` keeps the input line, with its history and line editing, below the
output, and a status line under it shows a spinner and the running tools while the agent works.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import threading
import time
import typing
from collections.abc import Callable, Iterator
from typing import TextIO

__all__ = ["INSTALL_HINT", "available", "start_terminal_input", "terminal_output"]

INSTALL_HINT = "line editing and history need prompt_toolkit: pip install 'pi-agent-core-py[chat]'"
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def available() -> bool:
    """Whether prompt_toolkit is installed."""
    return importlib.util.find_spec("prompt_toolkit") is not None


@contextlib.contextmanager
def terminal_output() -> Iterator[TextIO]:
    """Route ``sys.stdout`` above the input line while the block runs; yields where to write.

    What it yields passes whole lines on: a partial line written above a live prompt would be
    overwritten when the prompt is redrawn.
    """
    from prompt_toolkit.patch_stdout import patch_stdout

    with patch_stdout(raw=True):
        yield typing.cast("TextIO", _WholeLines(sys.stdout))


class _WholeLines(io.TextIOBase):
    """A text stream that writes to ``target`` one complete line at a time."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self._target = target
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            self._target.write(line + "\n")
        self._target.flush()
        return len(text)

    def isatty(self) -> bool:
        return self._target.isatty()


def start_terminal_input(
    on_line: Callable[[str], bool],
    on_interrupt: Callable[[], bool],
    on_end: Callable[[], bool],
    status: Callable[[], str],
) -> None:
    """Read lines in a daemon thread until the end of input, calling the thread-safe callbacks
    (which return False once the chat is over). ``status()`` is the text of the status line (a
    spinner is added while it is not empty)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import InMemoryHistory

    def toolbar() -> str:
        text = status()
        return f"{_SPINNER[int(time.monotonic() * 10) % len(_SPINNER)]} {text}" if text else ""

    session: PromptSession[str] = PromptSession(
        history=InMemoryHistory(), bottom_toolbar=toolbar, refresh_interval=0.1
    )

    def read() -> None:
        going = True
        while going:
            try:
                going = on_line(session.prompt("you> "))
            except KeyboardInterrupt:
                going = on_interrupt()
            except EOFError:
                on_end()
                return

    threading.Thread(target=read, name="pi-core chat prompt", daemon=True).start()
