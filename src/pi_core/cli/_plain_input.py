"""The input line of ``pi-core chat`` on a terminal without prompt_toolkit: ``input()`` with the
standard library's ``readline`` (line editing and history), or plain lines from a pipe."""

from __future__ import annotations

import contextlib
import select
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = ["line_reader", "terminal_mode_kept"]


def line_reader(stdin: TextIO, prompt: Callable[[], str]) -> Callable[[], str]:
    """``stdin.readline``, or on a terminal ``input()`` with the standard library's line editing
    and history (GNU readline or libedit), where there is one: raw lines would carry the escape
    sequences of the arrow keys.

    Readline must own the prompt it edits after, yet the chat shows ``you>`` as soon as it is idle:
    so the line is read from the first key typed, with the prompt of that moment (``prompt()``),
    drawn afresh over the one the chat printed. To see that first key before its line is
    complete, and not echoed twice, the terminal waits in non-canonical mode without echo.
    """
    if not (stdin is sys.stdin and stdin.isatty() and sys.stdout.isatty()):
        return stdin.readline
    try:
        import readline  # noqa: F401  (importing it is what gives input() its line editing)
        import termios
    except ImportError:  # Windows: the console edits lines itself
        return stdin.readline
    mode = termios.tcgetattr(stdin)
    waiting, typing = _keys_one_by_one(mode, echo=False), _keys_one_by_one(mode, echo=True)

    def read_line() -> str:
        termios.tcsetattr(stdin, termios.TCSANOW, waiting)
        select.select([stdin], [], [])  # the first key; readline reads (and echoes) it
        termios.tcsetattr(stdin, termios.TCSANOW, typing)  # readline edits only if ECHO is on
        shown = prompt()
        if shown:
            sys.stdout.write("\r\x1b[K")  # over the chat's prompt
            sys.stdout.flush()  # before readline draws its own, through C's stdout
        try:
            return input(shown) + "\n"
        except EOFError:
            return ""

    return read_line


def _keys_one_by_one(mode: list[Any], *, echo: bool) -> list[Any]:
    """The terminal ``mode`` (termios attributes), with each key readable as it is typed, and
    echoed by the terminal or not."""
    import termios

    changed = [*mode[:6], list(mode[6])]
    changed[3] &= ~(termios.ICANON | (0 if echo else termios.ECHO))
    changed[6][termios.VMIN], changed[6][termios.VTIME] = 1, 0
    return changed


@contextlib.contextmanager
def terminal_mode_kept(stdin: TextIO) -> Iterator[None]:
    """Give the terminal of ``stdin`` back in the mode it had (the plain reader changes it)."""
    try:
        import termios

        mode = termios.tcgetattr(stdin) if stdin.isatty() else None
    except (ImportError, OSError):
        mode = None
    try:
        yield
    finally:
        if mode is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, mode)
