"""The session files of ``/save`` and ``/load``: written as the Pi coding agent writes them, read
along the branch the file ends on, version 1 files (no ids) included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_core import AgentMessage, AssistantMessage, TextContent, UserMessage
from pi_core.cli._session_file import SessionFileError, load_session, save_session
from pi_core.serialization import to_dict


def write_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


HEADER = {"type": "session", "id": "s1", "timestamp": "2025-06-01T00:00:00Z", "cwd": "/tmp"}


def test_saved_messages_load_back_equal(tmp_path: Path) -> None:
    messages: list[AgentMessage] = [
        UserMessage("Hi", timestamp=1),
        AssistantMessage([TextContent("Hello!")], "faux", "faux", "faux-1", timestamp=2),
    ]
    save_session(tmp_path / "s.jsonl", messages)
    assert load_session(tmp_path / "s.jsonl") == messages


def test_loading_follows_the_branch_the_file_ends_on(tmp_path: Path) -> None:
    def entry(id: str, parent: str | None, text: str) -> dict[str, Any]:
        message = to_dict(UserMessage(text, timestamp=1))
        return {
            "type": "message",
            "id": id,
            "parentId": parent,
            "timestamp": "t",
            "message": message,
        }

    label = {"type": "label", "id": "l", "parentId": "b", "timestamp": "t", "targetId": "a"}
    lines = [
        {**HEADER, "version": 2},
        entry("a", None, "root"),
        entry("x", "a", "abandoned branch"),
        entry("b", "a", "kept branch"),
        label,
    ]
    write_lines(tmp_path / "s.jsonl", lines)
    texts = [getattr(message, "content", None) for message in load_session(tmp_path / "s.jsonl")]
    assert texts == ["root", "kept branch"]


def test_a_version_1_file_without_ids_is_read_in_order(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        HEADER,
        {"type": "message", "timestamp": "t", "message": to_dict(UserMessage("one", timestamp=1))},
        {"type": "model_change", "timestamp": "t", "provider": "p", "modelId": "m"},
        {"type": "message", "timestamp": "t", "message": to_dict(UserMessage("two", timestamp=2))},
    ]
    write_lines(tmp_path / "s.jsonl", lines)
    loaded = load_session(tmp_path / "s.jsonl")
    assert [getattr(m, "content", None) for m in loaded] == ["one", "two"]


def test_a_file_without_a_session_header_is_refused(tmp_path: Path) -> None:
    write_lines(tmp_path / "s.jsonl", [{"role": "user", "content": "hi"}])
    with pytest.raises(SessionFileError, match="is not a session file"):
        load_session(tmp_path / "s.jsonl")


def test_the_agents_own_messages_load_as_the_user_messages_it_sends(tmp_path: Path) -> None:
    shell = {"role": "bashExecution", "command": "ls", "output": "", "exitCode": 2, "timestamp": 5}
    hook = {"role": "hookMessage", "customType": "x", "content": "from a hook", "timestamp": 6}
    lines: list[dict[str, Any]] = [
        {**HEADER, "version": 2},
        {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": shell},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": "t", "message": hook},
    ]
    write_lines(tmp_path / "s.jsonl", lines)
    assert load_session(tmp_path / "s.jsonl") == [
        UserMessage([TextContent("Ran `ls`\n(no output)\n\nCommand exited with code 2")], 5),
        UserMessage([TextContent("from a hook")], 6),
    ]
