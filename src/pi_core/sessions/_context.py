"""The messages the Pi coding agent sends a model from one branch of its session file, as pi_core
messages: what a resumed conversation continues from.

The agent rebuilds a conversation from the entries on the path from the root to the leaf. The
latest compaction on it stands for everything before the first entry it kept: it gives the system
message in force at that point (when it recorded one) and the summary; then come the kept
entries (without their system messages, which that one replaces) and the entries after it. A
message entry gives its message, a custom message entry and a branch summary a message each, and
a ``context_edit`` entry replaces or removes the model content of the entry it targets. The
agent's own kinds of message (a shell command the user ran, a custom message, a summary) reach the
model as user messages with the texts built here, exactly as the agent words them.
"""

from __future__ import annotations

import datetime
from typing import Any

from .. import AgentMessage
from ..lowlevel import COMPACTION_SUMMARY, exception_text
from ..serialization import from_dict

__all__ = ["BRANCH_SUMMARY", "BadEntry", "compaction_head", "context_messages"]

BRANCH_SUMMARY = (
    "The following is a summary of a branch that this conversation came back from:"
    "\n\n<summary>\n{}</summary>"
)

_EDITABLE = frozenset(("user", "assistant", "toolResult", "custom"))


class BadEntry(Exception):
    """An entry of the branch has the wrong shape; ``reason`` says how."""

    def __init__(self, entry: dict[str, Any], reason: str) -> None:
        super().__init__(reason)
        self.entry = entry
        self.reason = reason


def context_messages(
    branch: list[dict[str, Any]],
) -> tuple[list[AgentMessage], list[str | None]]:
    """The messages of ``branch`` (its entries from the root on) as the model is sent them, and
    for each the id of the entry it comes from (``None`` for a compaction's summary and system
    message)."""
    entries = _context_entries(branch)
    edits = {e.get("targetId"): e for e in entries if e.get("type") == "context_edit"}
    messages: list[AgentMessage] = []
    ids: list[str | None] = []
    for index, entry in enumerate(entries):
        try:
            found = _entry_messages(entry, index, edits)
        except KeyError as exc:
            raise BadEntry(entry, f"it lacks its field {exc}") from None
        except (TypeError, AttributeError, ValueError, RecursionError) as exc:
            raise BadEntry(entry, exception_text(exc)) from None
        messages.extend(found)
        own = None if entry.get("type") == "compaction" else entry.get("id")
        ids.extend([own] * len(found))
    return messages, ids


def _entry_messages(
    entry: dict[str, Any], index: int, edits: dict[Any, dict[str, Any]]
) -> list[AgentMessage]:
    if entry.get("type") == "compaction":
        # An older compaction the newest one kept says nothing any more.
        return compaction_head(entry) if index == 0 else []
    data = _entry_data(entry)
    edit = edits.get(entry.get("id"))
    if data is not None and edit is not None:
        data = _edited(data, edit["replacement"])
    return [] if data is None else [_message(data)]


def _context_entries(path: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The path with the latest compaction first in place of what it summarised."""
    at = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), -1)
    if at < 0:
        return path
    compaction = path[at]
    first_kept = compaction.get("firstKeptEntryId")
    kept: list[dict[str, Any]] = []
    found = False
    for entry in path[:at]:
        found = found or entry.get("id") == first_kept
        if found and not _is_system(entry):
            kept.append(entry)
    return [compaction, *kept, *path[at + 1 :]]


def _is_system(entry: dict[str, Any]) -> bool:
    message = entry.get("message")
    return (
        entry.get("type") == "message"
        and isinstance(message, dict)
        and (message.get("role") == "system")
    )


def compaction_head(entry: dict[str, Any]) -> list[AgentMessage]:
    """What a compaction entry stands for: its system message (when it has one), then its
    summary as a user message."""
    summary = _user(COMPACTION_SUMMARY.format(entry["summary"]), _ms(entry["timestamp"]))
    system = entry.get("systemMessage")
    return [_message(system), summary] if system else [summary]


def _entry_data(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The message an entry contributes, as the agent's JSON (``None``: it contributes none)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry["message"]
        if isinstance(message, dict) and message.get("role") == "bashExecution":
            return None if message.get("excludeFromContext") else message
        if isinstance(message, dict) and message.get("content") is None:
            # Files written by hand or by old versions may lack it; the agent fills it in.
            empty: object = "" if message.get("role") == "system" else []
            if message.get("role") in ("system", "user", "assistant", "toolResult"):
                return {**message, "content": empty}
        return message  # type: ignore[no-any-return]
    if kind == "custom_message":
        content = entry["content"] if entry.get("content") is not None else []
        return {"role": "custom", "content": content, "timestamp": _ms(entry["timestamp"])}
    if kind == "branch_summary" and entry.get("summary"):
        return {
            "role": "branchSummary",
            "summary": entry["summary"],
            "timestamp": _ms(entry["timestamp"]),
        }
    return None  # model and thinking level changes, labels, usage, names, extension data


def _edited(data: dict[str, Any], replacement: Any) -> dict[str, Any] | None:
    """A message with a ``context_edit``'s replacement content (``None``: left out)."""
    if replacement is None:
        return None
    if data.get("role") not in _EDITABLE:
        return data
    content = replacement["content"]
    if data.get("role") in ("assistant", "toolResult") and isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return {**data, "content": content}


def _message(data: dict[str, Any]) -> AgentMessage:
    """One message of the file; the agent's own roles become the user messages it sends."""
    role, timestamp = data.get("role"), data.get("timestamp")
    if role == "bashExecution":
        return _user(_shell_text(data), timestamp)
    if role in ("custom", "hookMessage"):  # hookMessage: the name before format version 3
        return _user(data["content"], timestamp)
    if role == "branchSummary":
        return _user(BRANCH_SUMMARY.format(data["summary"]), timestamp)
    if role == "compactionSummary":
        return _user(COMPACTION_SUMMARY.format(data["summary"]), timestamp)
    message: AgentMessage = from_dict(data, AgentMessage)
    return message


def _shell_text(data: dict[str, Any]) -> str:
    """How the agent tells the model about a shell command the user ran (``!command``)."""
    output = data.get("output")
    text = f"Ran `{data['command']}`\n" + (f"```\n{output}\n```" if output else "(no output)")
    if data.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif data.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {data['exitCode']}"
    if data.get("truncated") and data.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {data['fullOutputPath']}]"
    return text


def _user(content: str | list[Any], timestamp: Any) -> AgentMessage:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    message: AgentMessage = from_dict(
        {"role": "user", "content": blocks, "timestamp": timestamp}, AgentMessage
    )
    return message


def _ms(iso_timestamp: str) -> int:
    """An entry's ISO 8601 time as milliseconds since the epoch, as JavaScript's Date gives it."""
    moment = datetime.datetime.fromisoformat(iso_timestamp.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)
