"""Reading a session file: its lines checked one by one, every failure a
:class:`SessionFileError` naming the line (the header is line 1).

A session file may come from anywhere, so reading one never hangs and never fails with anything
but that error (or an ``OSError``): only regular files are read, a line is capped in length, JSON
nested too deeply is named, and so is an entry whose ``parentId`` names no entry before it.

The last line is special. A writer appends each entry as one whole line ending in a newline, so
a last line without its newline was cut short by a writer that died in mid-write: it is left out
(and the next append writes over it), unless it is a whole entry, which is kept as the coding
agent keeps it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import jiter

from .. import PiCoreError

__all__ = [
    "MAX_LINE_BYTES",
    "SESSION_VERSION",
    "FileContents",
    "SessionFileError",
    "open_regular",
    "read_entries",
]

SESSION_VERSION = 3
"""The format version written and the newest one read: the coding agent's current one, so that
it opens our files as they are instead of migrating them."""

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line read (64 MiB): a longer one is refused before it is read whole."""

_CHUNK = 1024 * 1024
NON_BLOCKING = getattr(os, "O_NONBLOCK", 0)
"""Opening a FIFO without it waits for the other end."""


class SessionFileError(PiCoreError, ValueError):
    """The file is no session file this version can read: the text names the file and the line
    (``line N``, the header being line 1) and says what is wrong."""


@attrs.define
class FileContents:
    """What reading found: the header, the entries in file order (each with its line number)."""

    header: dict[str, Any]
    entries: list[dict[str, Any]]
    lines: list[int]
    """The line number of each entry."""
    end: int
    """The byte offset after the last whole line: a torn last line starts here."""
    torn: bool
    """Whether bytes after ``end`` are a torn line to write over."""
    unterminated: bool
    """Whether the last line is a whole entry without its newline (one must be added)."""
    by_id: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    """The entries that have an id, by id (a later one of the same id wins)."""


def open_regular(path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open`` of a regular file (a FIFO, a device or a socket is refused, unopened when it
    would block)."""
    fd = os.open(path, flags | NON_BLOCKING, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SessionFileError(f"{path} is not a regular file")
        if NON_BLOCKING:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_entries(path: Path, file: BinaryIO) -> FileContents:
    """Read and check every line of the session file open as ``file``."""
    reader = _Reader(path)
    pending = bytearray()
    with _collector_paused():
        while chunk := file.read(_CHUNK):
            searched = len(pending)  # a long line is searched for its end only once
            pending += chunk
            reader.feed(pending, searched)
        return reader.finish(bytes(pending))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a file is read.

    Reading makes hundreds of thousands of dicts and lists, none of them garbage, and each
    allocation counts towards the collector's next pass over them: in a large file those passes
    took as long as the parsing itself. Nothing read can form a cycle, so the collector has
    nothing to find until the reading is done.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.number = 0
        self.offset = 0
        self.header: dict[str, Any] | None = None
        self.entries: list[dict[str, Any]] = []
        self.lines: list[int] = []
        self.by_id: dict[str, dict[str, Any]] = {}

    def feed(self, data: bytearray, searched: int) -> None:
        """Take every whole line of ``data`` (no newline before ``searched``), leaving the
        unfinished rest in it."""
        start = 0
        while (newline := data.find(b"\n", max(start, searched))) != -1:
            self._line(bytes(data[start:newline]))
            self.offset += newline + 1 - start
            start = newline + 1
        del data[:start]
        if len(data) > MAX_LINE_BYTES:
            self._fail(self.number + 1, f"is longer than {MAX_LINE_BYTES} bytes")

    def finish(self, rest: bytes) -> FileContents:
        torn = unterminated = False
        if rest.strip():
            whole = self._whole_entry(rest)
            if whole:
                self._line(rest)
                unterminated = True
            else:
                torn = True
        elif rest:
            torn = True  # spaces after the last newline: written over too
        if self.header is None:
            raise SessionFileError(f"{self.path} is not a session file (it is empty)")
        return FileContents(
            self.header, self.entries, self.lines, self.offset, torn, unterminated, self.by_id
        )

    def _whole_entry(self, raw: bytes) -> bool:
        try:
            return isinstance(json.loads(raw), dict)
        except (ValueError, RecursionError):
            return False

    def _line(self, raw: bytes) -> None:
        self.number += 1
        if not raw.strip():
            return
        value = self._parse(raw)
        if self.header is None:
            self._take_header(value)
        else:
            self._take_entry(value)

    def _parse(self, raw: bytes) -> Any:
        try:
            # jiter reads a line about three times as fast as json; json reads what jiter
            # refuses (a lone surrogate escape, which JSON.stringify writes; nesting deeper
            # than jiter's limit) and words the error of a line that is not JSON.
            return jiter.from_json(raw, allow_inf_nan=True)
        except ValueError:
            pass
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._fail(self.number, f"is not UTF-8 text (at byte {exc.start})")
        try:
            return json.loads(text)
        except RecursionError:
            self._fail(self.number, "is JSON nested too deeply")
        except ValueError as exc:
            self._fail(self.number, f"is not JSON ({exc})")

    def _take_header(self, value: Any) -> None:
        if not isinstance(value, dict) or value.get("type") != "session":
            raise SessionFileError(
                f"{self.path} is not a session file (line {self.number} is no session header)"
            )
        version = value.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool):
            self._fail(self.number, f"has a version that is not a number: {version!r}")
        if version > SESSION_VERSION:
            self._fail(
                self.number,
                f"is session format version {version}, newer than the {SESSION_VERSION} "
                "this pi_core reads",
            )
        self.header = value

    def _take_entry(self, value: Any) -> None:
        # Run for every line of a file that may hold tens of thousands: the checks are inline.
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            self._fail(self.number, "is not an entry (a JSON object with a type)")
        entry_id, parent = value.get("id"), value.get("parentId")
        if entry_id is not None and not isinstance(entry_id, str):
            self._fail(self.number, "has an id that is not a string")
        if entry_id in self.by_id:  # a second entry of that id could make the parents a ring
            self._fail(self.number, f"has the id {entry_id!r}, which an earlier entry has")
        if parent is not None and not (isinstance(parent, str) and parent in self.by_id):
            if not isinstance(parent, str):
                self._fail(self.number, "has a parentId that is not a string")
            self._fail(self.number, f"has the parentId {parent!r}, which names no earlier entry")
        if entry_id is not None:
            self.by_id[entry_id] = value
        self.entries.append(value)
        self.lines.append(self.number)

    def _fail(self, number: int, what: str) -> Any:
        raise SessionFileError(f"{self.path}: line {number} {what}")
