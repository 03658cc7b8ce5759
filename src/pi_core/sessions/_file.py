"""A session file of the Pi coding agent, open for reading and appending.

The format (version 3) is JSON lines: a header ``{"type": "session", "version": 3, "id",
"timestamp", "cwd"}``, then one entry per line, each ``{"type", "id", "parentId", "timestamp",
…}``. ``parentId`` links an entry to the one it follows, so the entries form a tree: the branch
in use runs from the root to the *leaf*, the entry appended last unless :meth:`SessionFile.branch`
moved it. Message entries hold a message in upstream's JSON (:mod:`pi_core.serialization`);
compaction, branch summary, custom message, ``context_edit``, usage, label, model change and other
entries hold what their ``type`` says, and a kind this version does not know is kept and skipped.

Appending is crash-safe: each entry is one ``write`` of a whole line, and a line a killed writer
left unfinished is ignored when the file is opened and written over by the next append. One
process at a time may write a file: it holds a lock (``flock``) for as long as the file is open,
and a second writer is refused. A new file is created with its first user or assistant message,
as the coding agent does, so a session that never started leaves no file behind.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import re
import secrets
import sys
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

from .. import AgentMessage, Compaction
from ..lowlevel import current_system_message
from ..serialization import to_dict
from ._context import BadEntry, compaction_head, context_messages
from ._read import SESSION_VERSION, FileContents, SessionFileError, open_regular, read_entries

if sys.platform != "win32":
    import fcntl

__all__ = ["SessionFile", "session_id"]

SESSION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
"""What a session id may be (the coding agent's rule): it names the file the agent keeps."""

_CONVERSATION = ("user", "assistant")
_NO_CONTEXT = frozenset(
    ("model_change", "thinking_level_change", "label", "session_info", "custom", "usage")
)
"""Entry kinds that never change the messages of a branch."""


class SessionFile:
    """A session file: its entries, the branch in use, and appending to it.

    Make one with :meth:`create` or :meth:`open`; close it (or use it as a context manager) to
    release the writer's lock. ``messages()`` is what a resumed Agent continues from::

        with SessionFile.open("chat.jsonl") as session:
            agent = Agent(model=..., messages=session.messages())
            record(agent, session)
    """

    def __init__(
        self,
        path: Path,
        contents: FileContents,
        fd: int | None,
        writable: bool,
        fsync: bool = False,
    ) -> None:
        """Use :meth:`create` or :meth:`open`."""
        self.path = path
        self._fsync = fsync
        self.header: dict[str, Any] = contents.header
        """The first line: ``{"type": "session", "version", "id", "timestamp", "cwd", …}``."""
        self._entries = contents.entries
        self._lines = contents.lines
        self._by_id = contents.by_id
        self.leaf_id: str | None = self._entries[-1].get("id") if self._entries else None
        """The entry the branch in use ends on (``None``: the root, before any entry)."""
        self._fd = fd
        self._writable = writable
        self._torn = contents.torn
        self._unterminated = contents.unterminated
        self._end = contents.end
        self._context: tuple[list[AgentMessage], list[str | None]] | None = None

    # --- making one -----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        cwd: str | None = None,
        id: str | None = None,
        fsync: bool = False,
    ) -> SessionFile:
        """A new session to be written to ``path``, created at its first user or assistant
        message.

        Args:
            path: where the file goes; nothing may be there yet.
            cwd: the working directory the header names (default: the current one).
            id: the session id (default: a new UUID version 7).
            fsync: make each append durable before it returns (see :meth:`open`).

        Raises:
            FileExistsError: ``path`` exists (now, or by the time the file is created).
            ValueError: ``id`` is not a valid session id (letters, digits, ``.``, ``_``, ``-``,
                starting and ending with a letter or digit).
        """
        target = Path(path)
        if id is not None and not SESSION_ID.fullmatch(id):
            raise ValueError(
                f"invalid session id {id!r}: use letters, digits, '.', '_' and '-', "
                "starting and ending with a letter or digit"
            )
        if os.path.lexists(target):
            raise FileExistsError(f"{target} exists already: open it to continue the session")
        header = {
            "type": "session",
            "version": SESSION_VERSION,
            "id": id if id is not None else session_id(),
            "timestamp": _iso(time.time_ns() // 1_000_000),
            "cwd": cwd if cwd is not None else os.getcwd(),
        }
        return cls(target, FileContents(header, [], [], 0, False, False), None, True, fsync)

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, read_only: bool = False, fsync: bool = False
    ) -> SessionFile:
        """The session file at ``path``, locked for appending unless ``read_only``.

        Every append is written to the operating system before it returns, so a process killed
        at any moment loses nothing appended. With ``fsync``, it is also on the disk by then
        (``fsync`` of the file, and of its directory when the append created it): a power cut
        or a crash of the machine loses nothing appended either, at the cost of a disk flush
        per entry.

        Raises:
            OSError: the file cannot be opened or read.
            SessionFileError: it is no session file this version reads (the text names the line
                and says why), or another process has it open for writing.
        """
        target = Path(path)
        fd = open_regular(target, os.O_RDONLY if read_only else os.O_RDWR | os.O_APPEND)
        try:
            if not read_only:
                _lock(target, fd)
            with io.FileIO(fd, "rb", closefd=False) as file:
                contents = read_entries(target, file)
        except BaseException:
            os.close(fd)
            raise
        if read_only:
            os.close(fd)
        return cls(target, contents, None if read_only else fd, not read_only, fsync)

    def flush(self) -> None:
        """Create the file now, even before its first user or assistant message (appends are
        written as they are made: there is nothing else to flush)."""
        if self._writable and self._fd is None:
            self._write(self._all_lines())

    def close(self) -> None:
        """Release the file (and its writer's lock). Appending afterwards raises."""
        fd, self._fd, self._writable = self._fd, None, False
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> SessionFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SessionFile {str(self.path)!r} entries={len(self._entries)} leaf={self.leaf_id}>"

    # --- reading --------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The session id of the header."""
        return str(self.header.get("id", ""))

    @property
    def entries(self) -> list[dict[str, Any]]:
        """Every entry, in file order (the header excluded); each is the JSON object of its line."""
        return list(self._entries)

    def entry(self, entry_id: str) -> dict[str, Any]:
        """The entry with id ``entry_id`` (``KeyError`` when there is none)."""
        return self._by_id[entry_id]

    def children(self, entry_id: str | None) -> list[dict[str, Any]]:
        """The entries whose parent is ``entry_id`` (``None``: the roots), in file order."""
        return [e for e in self._entries if e.get("parentId") == entry_id and "id" in e]

    def branch_entries(self) -> list[dict[str, Any]]:
        """The entries from the root to the leaf (every entry, in order, in a version 1 file,
        which has no ids)."""
        if not self._by_id:
            return list(self._entries)
        path: list[dict[str, Any]] = []
        current = self._by_id.get(self.leaf_id) if self.leaf_id is not None else None
        while current is not None:
            path.append(current)
            parent = current.get("parentId")
            current = self._by_id.get(parent) if parent is not None else None
        return path[::-1]

    def messages(self) -> list[AgentMessage]:
        """What the Pi coding agent sends a model from the branch in use: the latest
        compaction's system message and summary, the kept messages, branch summaries and the
        agent's own kinds of message as user messages, with ``context_edit`` entries applied.

        Raises:
            SessionFileError: an entry on the branch has the wrong shape (the text names its
                line).
        """
        return list(self._context_now()[0])

    def _context_now(self) -> tuple[list[AgentMessage], list[str | None]]:
        if self._context is None:
            try:
                self._context = context_messages(self.branch_entries())
            except BadEntry as bad:
                raise SessionFileError(
                    f"{self.path}: line {self._line_of(bad.entry)} is a malformed entry: "
                    f"{bad.reason}"
                ) from None
        return self._context

    def message_entry_id(self, index: int) -> str | None:
        """The id of the entry ``messages()[index]`` comes from (``None``: a compaction's
        summary or system message)."""
        return self._context_now()[1][index]

    def _line_of(self, entry: dict[str, Any]) -> int:
        for index, candidate in enumerate(self._entries):
            if candidate is entry:
                return self._lines[index]
        return 0

    # --- writing --------------------------------------------------------------------------------

    def append(self, message: AgentMessage) -> str:
        """Append ``message`` after the leaf, as one flushed line; returns its entry id.

        Raises:
            SessionFileError: the file is read-only, closed, or of format version 1.
            OSError: writing failed (the entry is then not part of the session).
        """
        entry_id = self._append({"type": "message", "message": to_dict(message)}, message.role)
        if self._context is not None:
            messages, ids = self._context
            messages.append(message)
            ids.append(entry_id)
        return entry_id

    def append_compaction(self, compaction: Compaction) -> str:
        """Append a compaction entry for ``compaction``, made from :meth:`messages`: the
        coding agent then rebuilds its summary followed by the messages from
        ``compaction.first_kept_index`` on. Returns its entry id."""
        messages, ids = self._context_now()
        kept = [i for i in ids[compaction.first_kept_index :] if i is not None]
        fields: dict[str, Any] = {
            "type": "compaction",
            "summary": compaction.summary,
            "firstKeptEntryId": kept[0] if kept else None,
            "tokensBefore": compaction.tokens_before,
            "usage": to_dict(compaction.usage),
        }
        system = current_system_message(messages)
        if system is not None:  # the prompt and tools at this point, as the coding agent keeps
            fields["systemMessage"] = {**to_dict(system), "timestamp": compaction.timestamp}
        entry_id = self._append(fields, None, timestamp=compaction.timestamp)
        entry = self._by_id[entry_id]
        if entry["firstKeptEntryId"] is None:
            entry["firstKeptEntryId"] = entry_id  # kept nothing: itself
        # The kept messages stay the same objects: a recorder finds the agent's among them.
        head = compaction_head(entry)
        first = compaction.first_kept_index
        pairs = zip(messages[first:], ids[first:], strict=True)
        staying = [(m, i) for m, i in pairs if i is not None and m.role != "system"]
        self._context = (
            [*head, *(m for m, _ in staying)],
            [*([None] * len(head)), *(i for _, i in staying)],
        )
        return entry_id

    def append_entry(self, type: str, **fields: Any) -> str:
        """Append an entry of another kind (``model_change``, ``label``, ``custom`` …) with the
        JSON ``fields`` given; returns its entry id."""
        if type in ("session", "message", "compaction"):
            raise ValueError(f"use append or append_compaction for {type!r} entries")
        entry_id = self._append({"type": type, **fields}, None)
        if type not in _NO_CONTEXT:
            self._context = None  # it may change what the branch says: rebuilt when asked
        return entry_id

    def branch(self, entry_id: str | None) -> None:
        """Continue from ``entry_id``: later appends follow it, starting a new branch beside the
        entries that already follow it (``None``: from the root). Nothing is written until the
        next append, as in the coding agent.

        Raises:
            KeyError: no entry has that id.
        """
        if entry_id is not None and entry_id not in self._by_id:
            raise KeyError(f"no entry {entry_id!r} in {self.path}")
        self._context = self._context_at(entry_id)
        self.leaf_id = entry_id

    def _context_at(
        self, entry_id: str | None
    ) -> tuple[list[AgentMessage], list[str | None]] | None:
        """The context once the leaf moves back to ``entry_id`` on the branch in use, when the
        current one tells it: the entries after it are message entries, one message each."""
        if self._context is None or entry_id is None:
            return None
        messages, ids = self._context
        if entry_id not in ids:
            return None
        at = ids.index(entry_id)
        path = self.branch_entries()
        after = [e.get("id") for e in path[[e.get("id") for e in path].index(entry_id) + 1 :]]
        if after != ids[at + 1 :]:
            return None
        return messages[: at + 1], ids[: at + 1]

    def _append(
        self, fields: dict[str, Any], role: str | None, *, timestamp: int | None = None
    ) -> str:
        if not self._writable:
            raise SessionFileError(f"{self.path} is not open for writing")
        if self.header.get("version", 1) < 2:
            raise SessionFileError(
                f"{self.path}: line 1 is session format version 1, which has no entry ids: "
                "open it in the Pi coding agent once to upgrade it before appending"
            )
        entry_id = self._new_id()
        moment = timestamp if timestamp is not None else time.time_ns() // 1_000_000
        kind = fields.pop("type")
        entry = {"type": kind, "id": entry_id, "parentId": self.leaf_id, "timestamp": _iso(moment)}
        entry.update(fields)
        line = _line(entry)
        if self._fd is None and self._in_memory_until_conversation(role):
            self._remember(entry)
            return entry_id
        self._write(line if self._fd is not None else self._all_lines() + line)
        self._remember(entry)
        return entry_id

    def _in_memory_until_conversation(self, role: str | None) -> bool:
        """Whether a new session still waits for its first user or assistant message."""
        return role not in _CONVERSATION

    def _remember(self, entry: dict[str, Any]) -> None:
        self._entries.append(entry)
        self._lines.append(len(self._entries) + 1)
        self._by_id[entry["id"]] = entry
        self.leaf_id = entry["id"]

    def _all_lines(self) -> bytes:
        return b"".join(_line(e) for e in (self.header, *self._entries))

    def _write(self, data: bytes) -> None:
        """Write ``data`` whole at the end of the file, or leave the file as it was."""
        created = self._fd is None
        if self._fd is None:
            self._fd = _create(self.path)
        fd = self._fd
        if self._torn:
            os.ftruncate(fd, self._end)
            self._torn = False
        if self._unterminated:
            data = b"\n" + data
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if self._fsync:
                os.fsync(fd)
                if created:
                    _sync_directory(self.path.parent)
        except BaseException:
            _truncate_quietly(fd, size)
            raise
        self._unterminated = False
        self._end = size + len(data)

    def _new_id(self) -> str:
        for _ in range(100):
            candidate = secrets.token_hex(4)
            if candidate not in self._by_id:
                return candidate
        return str(uuid.uuid4())


def session_id() -> str:
    """A new session id: a UUID version 7 (time-ordered), as the coding agent makes them."""
    millis = time.time_ns() // 1_000_000
    value = (millis & (2**48 - 1)) << 80 | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # the RFC 4122 variant
    return str(uuid.UUID(int=value))


def _create(path: Path) -> int:
    """Create ``path`` for writing, exclusively (a file another writer made first is refused)."""
    fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND)
    try:
        _lock(path, fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _sync_directory(directory: Path) -> None:
    """``fsync`` a directory: a file created in it survives a power cut only once it is."""
    if sys.platform == "win32":  # directories cannot be opened there; NTFS journals them
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock(path: Path, fd: int) -> None:
    if sys.platform == "win32":  # no advisory locks there
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionFileError(
            f"{path} is open for writing in another process: one writer at a time"
        ) from None


def _truncate_quietly(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass  # the torn rest is ignored by the next reader, and written over by the next append


def _line(entry: dict[str, Any]) -> bytes:
    # Compact, as JSON.stringify writes it.
    return (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _iso(millis: int) -> str:
    """Milliseconds since the epoch as JavaScript's ``Date.toISOString`` writes them."""
    moment = datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
