"""The messages the Pi coding agent sends a model from a branch of its session file, as pi_core
messages: what ``/load`` of ``pi-core chat`` continues from.

The agent rebuilds a conversation from the entries of one branch: a compaction replaces the
entries before the first one it kept with a summary; message entries, custom message entries and
branch summaries each give a message. Its own kinds of message (a shell command the user ran, a
custom message, a summary) reach the model as user messages with the texts built here, exactly
as the agent words them.
"""

from __future__ import annotations

import datetime
from typing import Any

from .._messages import AgentMessage
from ..serialization import from_dict

__all__ = ["context_messages"]

COMPACTION_SUMMARY = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n{}\n</summary>"
)
BRANCH_SUMMARY = (
    "The following is a summary of a branch that this conversation came back from:"
    "\n\n<summary>\n{}</summary>"
)


def context_messages(branch: list[dict[str, Any]]) -> list[AgentMessage]:
    """The messages of ``branch`` (its entries from the root on) as the model is sent them."""
    compactions = [entry for entry in branch if entry.get("type") == "compaction"]
    if not compactions:
        return _messages(branch)
    compaction = compactions[-1]
    at = branch.index(compaction)
    kept_ids = [entry.get("id") for entry in branch[:at]]
    first = compaction.get("firstKeptEntryId")
    start = kept_ids.index(first) if first in kept_ids else at
    summary = _user_text(COMPACTION_SUMMARY.format(compaction["summary"]), compaction["timestamp"])
    return [summary, *_messages(branch[start:at] + branch[at + 1 :])]


def _messages(entries: list[dict[str, Any]]) -> list[AgentMessage]:
    found = (_entry_message(entry) for entry in entries)
    return [message for message in found if message is not None]


def _entry_message(entry: dict[str, Any]) -> AgentMessage | None:
    kind = entry.get("type")
    if kind == "message":
        return _message(entry["message"])
    if kind == "custom_message":
        return _user(entry["content"], _milliseconds(entry["timestamp"]))
    if kind == "branch_summary" and entry.get("summary"):
        return _user_text(BRANCH_SUMMARY.format(entry["summary"]), entry["timestamp"])
    return None  # model and thinking level changes, labels, names, extension data


def _message(data: dict[str, Any]) -> AgentMessage | None:
    """One message of the file; the agent's own roles become the user messages it sends."""
    role, timestamp = data.get("role"), data.get("timestamp")
    if role == "bashExecution":
        return None if data.get("excludeFromContext") else _user(_shell_text(data), timestamp)
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


def _user_text(text: str, iso_timestamp: str) -> AgentMessage:
    return _user(text, _milliseconds(iso_timestamp))


def _milliseconds(iso_timestamp: str) -> int:
    """An entry's ISO 8601 time as milliseconds since the epoch, as JavaScript's Date gives it."""
    moment = datetime.datetime.fromisoformat(iso_timestamp.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)
