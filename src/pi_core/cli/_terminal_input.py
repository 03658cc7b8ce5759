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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..lowlevel import install_hint

if TYPE_CHECKING:
    from prompt_toolkit.history import History
    from prompt_toolkit.key_binding import KeyPressEvent

__all__ = [
    "HISTORY_VARIABLE",
    "available",
    "history_file",
    "install_note",
    "start_terminal_input",
    "terminal_output",
]

HISTORY_VARIABLE = "PI_CORE_CHAT_HISTORY"
"""The environment variable naming the history file; ``off`` (or empty) keeps none."""

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


def install_note() -> str:
    """What the chat says on a terminal without prompt_toolkit: what the extra adds, and how."""
    return f"line editing and history need prompt_toolkit: {install_hint('chat')}"


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
    commands: Sequence[str] = (),
) -> Callable[[], None]:
    """Read lines in a daemon thread until the end of input, calling the thread-safe callbacks
    (which return False once the chat is over). ``status()`` is the text of the status line (a
    spinner is added while it is not empty); Tab completes the slash ``commands``.

    Returns:
        ``stop()``: ends the input line and erases it, so that nothing stale stays on screen
        (nor the shell's prompt after ours); call it before leaving :func:`terminal_output`.
    """
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.key_binding import KeyBindings

    def toolbar() -> str:
        text = status()
        return f"{_SPINNER[int(time.monotonic() * 10) % len(_SPINNER)]} {text}" if text else ""

    bindings = KeyBindings()

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        # Erased: the chat says what Ctrl-C did, and a new prompt follows.
        event.app.erase_when_done = True
        event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")

    session: PromptSession[str] = PromptSession(
        history=_history(),
        bottom_toolbar=toolbar,
        refresh_interval=0.1,
        # sentence: the line so far is compared, so only a line's first word is completed.
        completer=WordCompleter(list(commands), sentence=True),
        complete_while_typing=False,
        key_bindings=bindings,
    )
    stopping = threading.Event()
    posting = threading.Event()  # the reader is in a callback, waiting for the chat's loop

    def read() -> None:
        going = True
        while going and not stopping.is_set():
            try:
                line: str | None = session.prompt("you> ")
            except KeyboardInterrupt:
                line = None
            except EOFError:
                if not stopping.is_set():  # stop() ended the prompt: the chat knows already
                    on_end()
                return
            finally:
                session.app.erase_when_done = False
            posting.set()
            going = on_interrupt() if line is None else on_line(line)
            posting.clear()

    reader = threading.Thread(target=read, name="pi-core chat prompt", daemon=True)
    reader.start()

    app = session.app

    def end() -> None:
        if app.is_running and app.future is not None and not app.future.done():
            app.erase_when_done = True
            app.exit(exception=EOFError())

    def stop() -> None:
        stopping.set()
        # The reader may be between two prompts (a Ctrl-C's prompt ended, the next one not yet
        # running): ending only a running prompt would leave the next one on screen, so every
        # prompt that runs until the reader is gone is ended and erased. A reader in a callback
        # waits for the chat's loop, which is here: it sees `stopping` when the callback
        # returns, before any new prompt.
        deadline = time.monotonic() + _STOP_TIMEOUT
        while reader.is_alive() and not posting.is_set() and time.monotonic() < deadline:
            loop = app.loop
            if loop is not None and app.is_running:
                loop.call_soon_threadsafe(end)
            reader.join(_STOP_POLL)

    return stop


_STOP_TIMEOUT = 2.0
"""How long ``stop()`` waits for the input line to be erased (it takes a redraw)."""
_STOP_POLL = 0.02
"""How often ``stop()`` looks again for a prompt to end while the reader goes on."""
