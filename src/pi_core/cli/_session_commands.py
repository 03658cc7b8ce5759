"""The session side of ``pi-core chat``: ``--session FILE`` (every message appended as it ends),
``/save`` and ``/load`` (a whole conversation to or from a session file of the Pi coding agent),
``/compact``, ``/tree`` and ``/branch``."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from .. import Agent, AgentMessage, AssistantMessage, CompactionError, SystemMessage, ToolCall
from ..lowlevel import clip, current_system_message
from ..sessions import SessionFile, record
from ._setup import UsageError

__all__ = ["SessionCommands"]


class SessionCommands:
    """The chat's session file (if any) and the commands that use it."""

    def __init__(self, agent: Agent, session: SessionFile | None) -> None:
        self.agent = agent
        self.session = session
        self._stop: Callable[[], bool] | None = None
        if session is not None:
            self._stop = record(agent, session)

    @classmethod
    def start(cls, agent: Agent, path: Path | None) -> SessionCommands:
        """Continue the session at ``path`` (created at the first message if missing).

        Raises:
            UsageError: the file cannot be opened or is no session file (the text says why).
        """
        if path is None:
            return cls(agent, None)
        try:
            if path.exists():
                session = SessionFile.open(path)
                baseline = _missing_baseline(agent, session.messages())
                if baseline is not None:
                    # A file that never stated a prompt (Pi 0.73.1's): this chat's prompt and
                    # tools are recorded after its history, as Pi 1.6.0 does on resuming it.
                    session.append(attrs.evolve(baseline, timestamp=agent.clock()))
                agent.state.messages = session.messages()
            else:
                session = SessionFile.create(path)
        except (OSError, ValueError) as exc:  # SessionFileError is a ValueError
            raise UsageError(f"--session: {exc}") from None
        return cls(agent, session)

    def close(self) -> None:
        if self._stop is not None:
            self._stop()
        if self.session is not None:
            self.session.close()

    def command(self, name: str, argument: str) -> str:
        """Carry out ``/save``, ``/load``, ``/tree`` or ``/branch``; returns what to tell."""
        try:
            if name == "/tree":
                return self._tree()
            if name == "/branch":
                return self._branch(argument)
            if not argument:
                return f"{name} needs a file name"
            path = Path(argument).expanduser()
            if name == "/save":
                count = save(path, self.agent.state.messages)
                return f"saved {count} messages to {path}"
            if self.session is not None:
                return f"/load: this chat records to {self.session.path}; /branch moves in it"
            with SessionFile.open(path, read_only=True) as loaded:
                self.agent.state.messages = with_baseline(self.agent, loaded.messages())
            return f"loaded {len(self.agent.state.messages)} messages from {path}"
        except (OSError, ValueError, KeyError) as exc:  # no such file, entry, or no session
            return f"{name} failed: {exc}"

    async def compact(self, instructions: str | None) -> str:
        """``/compact``: the Agent compacts now; a recorded session gets the entry."""
        before = len(self.agent.state.messages)
        try:
            compaction = await self.agent.compact(instructions)
        except CompactionError as exc:
            return f"/compact failed: {exc}"
        return (
            f"compacted: {compaction.first_kept_index} of {before} messages summarised "
            f"(about {compaction.tokens_before} tokens before)"
        )

    def _tree(self) -> str:
        if self.session is None:
            return "/tree needs a chat started with --session FILE"
        return tree_text(self.session)

    def _branch(self, entry_id: str) -> str:
        session = self.session
        if session is None:
            return "/branch needs a chat started with --session FILE"
        if not entry_id:
            return "/branch needs an entry id (see /tree)"
        leaf = session.leaf_id
        session.branch(entry_id)
        messages = session.messages()
        last = messages[-1] if messages else None
        if isinstance(last, AssistantMessage) and any(
            isinstance(b, ToolCall) for b in last.content
        ):
            session.branch(leaf)  # a reply whose calls have no results cannot be continued
            return f"/branch: {entry_id} is a reply whose tool calls have no results there"
        self.agent.state.messages = with_baseline(self.agent, messages)
        return f"continuing from {entry_id}: {len(messages)} messages"


def _missing_baseline(agent: Agent, messages: list[AgentMessage]) -> SystemMessage | None:
    """The agent's system baseline (its prompt and tools), when ``messages`` declare none."""
    if any(message.role == "system" for message in messages):
        return None
    return current_system_message(agent.state.messages)


def with_baseline(agent: Agent, messages: list[AgentMessage]) -> list[AgentMessage]:
    """``messages`` to continue this chat from: a transcript without system messages (one
    written by Pi 0.73.1, or a branch of one) keeps the chat's own prompt and tools in front."""
    baseline = _missing_baseline(agent, messages)
    return messages if baseline is None else [baseline, *messages]


def save(path: Path, messages: list[Any]) -> int:
    """Write ``messages`` to ``path`` as a new session file, replacing the file only once the
    new one is whole."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    os.unlink(temporary)
    try:
        with SessionFile.create(temporary) as session:
            for message in messages:
                session.append(message)
            session.flush()
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return len(messages)


def tree_text(session: SessionFile) -> str:
    """The entries of ``session`` as an indented tree; ``*`` marks the branch in use."""
    on_branch = {e.get("id") for e in session.branch_entries()}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for entry in session.entries:
        children.setdefault(entry.get("parentId"), []).append(entry)
    lines: list[str] = []
    # Depth first without recursion (a session may be thousands of entries deep); a single
    # child continues the line of its parent, so the tree stays narrow.
    stack: list[tuple[dict[str, Any], int]] = [(e, 0) for e in reversed(children.get(None, []))]
    while stack:
        entry, depth = stack.pop()
        mark = "*" if entry.get("id") in on_branch else " "
        lines.append(f"{mark} {'  ' * depth}{entry.get('id')} {_describe(entry)}")
        below = children.get(entry.get("id"), [])
        step = 1 if len(below) > 1 else 0
        stack.extend((child, depth + step) for child in reversed(below))
    return "\n".join(lines) if lines else "(the session has no entries yet)"


def _describe(entry: dict[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        message = entry["message"]
        return f"{message.get('role')}: {clip(_text(message.get('content')), 60)}"
    if kind == "compaction":
        return f"compaction: {clip(str(entry.get('summary', '')), 60)}"
    return str(kind)


def _text(content: object) -> str:
    if isinstance(content, str):
        return " ".join(content.split())
    if isinstance(content, list):
        texts = (b.get("text", "") for b in content if isinstance(b, dict))
        return " ".join(" ".join(texts).split())
    return ""
