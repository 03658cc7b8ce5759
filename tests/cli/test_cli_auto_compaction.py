"""``pi-core chat`` compacts by itself when the conversation nears the model's context window,
and never with ``--no-compaction``. The demo model is given a tiny window (``--context-window``)
so that a few questions fill it; each compaction is noted in the chat and recorded in the
session file."""

from __future__ import annotations

import json
from pathlib import Path

from _cli_process import run_cli

from pi_core import UserMessage
from pi_core.sessions import SessionFile

QUESTIONS = "".join(f"What is {n}*{n + 1}? sleep 0 s\n" for n in range(2, 6))


def entry_types(path: Path) -> list[str]:
    return [json.loads(line)["type"] for line in path.read_text().splitlines()[1:]]


def test_a_chat_compacts_by_itself_when_the_context_window_fills(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    chat = run_cli("chat", "--context-window", "200", "--session", str(path), stdin=QUESTIONS)
    assert chat.returncode == 0, chat.stderr
    noted = chat.stdout.count("compacted automatically: ")
    assert noted >= 1
    assert entry_types(path).count("compaction") == noted
    with SessionFile.open(path, read_only=True) as session:
        first = next(m for m in session.messages() if isinstance(m, UserMessage))
    assert "compacted into the following summary" in str(first.content)


def test_no_compaction_keeps_the_whole_conversation(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    chat = run_cli(
        "chat",
        "--no-compaction",
        "--context-window",
        "200",
        "--session",
        str(path),
        stdin=QUESTIONS,
    )
    assert chat.returncode == 0, chat.stderr
    assert "compacted" not in chat.stdout
    assert "compaction" not in entry_types(path)
    with SessionFile.open(path, read_only=True) as session:
        first = next(m for m in session.messages() if isinstance(m, UserMessage))
    assert "What is 2*3?" in str(first.content)
