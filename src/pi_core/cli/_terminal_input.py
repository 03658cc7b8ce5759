"""The input line of ``pi-core chat`` on a terminal, with prompt_toolkit (the ``chat`` extra).

The prompt runs in a thread of its own, on any backend (prompt_toolkit brings its own asyncio
loop there): lines, Ctrl-C and Ctrl-D reach the chat through the same memory stream as the plain
reader's. ``patch_stdout`` keeps the input line, with its history and line editing, below the
output, and a status line under it shows a spinner and the running tools while the agent works.
The lines typed are kept in a history file across sessions (:func:`history_file`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
import threading
import time
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from prompt_toolkit.history import History

__all__ = [
    "HISTORY_VARIABLE",
    "INSTALL_HINT",
    "available",
    "history_file",
    "start_terminal_input",
    "terminal_output",
]

HISTORY_VARIABLE = "PI_CORE_CHAT_HISTORY"
"""The environment variable naming the history file; ``off`` (or empty) keeps none."""

INSTALL_HINT = "line editing and history need prompt_toolkit: pip install 'pi-agent-core-py[chat]'"
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def history_file(environ: Mapping[str, str]) -> Path | None:
    """The file that keeps the input lines across sessions, or None to keep them in memory only.

    ``PI_CORE_CHAT_HISTORY`` names it (``off`` or empty: none); else it is
    ``pi-core/chat-history`` under ``$XDG_STATE_HOME`` (when absolute) or ``~/.local/state``.
    """
    chosen = environ.get(HISTORY_VARIABLE)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off") else Path(chosen).expanduser()
    state = environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "pi-core" / "chat-history"


def _history() -> History:
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    path = history_file(os.environ)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        except OSError:  # no writable home: the history lasts for this session only
            return InMemoryHistory()
        return FileHistory(path)
    return InMemoryHistory()


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

    def toolbar() -> str:
        text = status()
        return f"{_SPINNER[int(time.monotonic() * 10) % len(_SPINNER)]} {text}" if text else ""

    session: PromptSession[str] = PromptSession(
        history=_history(), bottom_toolbar=toolbar, refresh_interval=0.1
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
