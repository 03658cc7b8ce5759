"""``/save`` and ``/load`` of ``pi-core chat``: a transcript as a session file of the Pi coding
agent (JSON lines), so that either program can open what the other wrote.

The file's first line is the header ``{"type": "session", "version": 3, "id", "timestamp",
"cwd"}``; each message is then an entry ``{"type": "message", "id", "parentId", "timestamp",
"message"}`` whose ``parentId`` is the entry before it, the message in upstream's JSON
(:mod:`pi_core.serialization`). Reading follows the ``parentId`` chain back from the last entry
(the branch the file ends on) and gives the messages the coding agent would send a model from it
(:mod:`._session_context`: compactions, summaries and its own kinds of message included); other
entry kinds (model changes, labels …) carry nothing pi_core keeps, and are skipped.
"""

from __future__ import annotations

import datetime
import json
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._messages import AgentMessage
from ..serialization import to_dict
from ._session_context import context_messages

__all__ = ["SESSION_VERSION", "SessionFileError", "load_session", "save_session"]

SESSION_VERSION = 3
"""The version of the Pi session format written (entries linked by ``id`` / ``parentId``): the
coding agent's current one, so that it opens the file as it is instead of migrating it."""


class SessionFileError(ValueError):
    """The file is not a session file: its first line is no session header."""


def save_session(path: Path, messages: Sequence[AgentMessage]) -> None:
    """Write ``messages`` to ``path`` as a new session (replacing the file)."""
    now = _now()
    header = {
        "type": "session",
        "version": SESSION_VERSION,
        "id": str(uuid.uuid4()),
        "timestamp": now,
        "cwd": os.getcwd(),
    }
    lines = [header]
    parent: str | None = None
    for message in messages:
        entry_id = uuid.uuid4().hex[:8]
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": now,
                "message": to_dict(message),
            }
        )
        parent = entry_id
    # Compact, as JSON.stringify writes it.
    text = "".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines
    )
    path.write_text(text, encoding="utf-8")


def load_session(path: Path) -> list[AgentMessage]:
    """The messages of the session in ``path``, along the branch its last entry ends.

    Raises:
        OSError: the file cannot be read.
        SessionFileError: the file has no session header first.
    """
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if not entries or not isinstance(entries[0], dict) or entries[0].get("type") != "session":
        raise SessionFileError(f"{path} is not a session file (no session header)")
    body = [entry for entry in entries[1:] if isinstance(entry, dict)]
    return context_messages(_branch(body))


def _branch(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries from the root to the last entry (all of them in a file without ids, as
    version 1 wrote)."""
    if not entries:
        return []
    by_id = {entry["id"]: entry for entry in entries if "id" in entry}
    if not by_id:
        return entries
    path: list[dict[str, Any]] = []
    current: dict[str, Any] | None = entries[-1]
    while current is not None:
        path.append(current)
        current = by_id.get(current.get("parentId"))
    return path[::-1]


def _now() -> str:
    # Milliseconds, as JavaScript's Date.toISOString writes them.
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
