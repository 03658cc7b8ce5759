"""``pi-core chat --session FILE``: every message appended as it ends, the session continued by
the next chat, ``/tree``, ``/branch`` and ``/compact``."""

from __future__ import annotations

import json
from pathlib import Path

from _cli_process import LiveCli

from pi_core.sessions import SessionFile


def entries(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_a_chat_records_its_session_and_the_next_one_continues_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    with LiveCli("chat", "--session", str(path)) as cli:
        cli.send_line("What is 2*3? sleep 0 s")
        cli.wait_for("done · 2 turns")
        assert len(entries(path)) == 7  # appended as they ended, before the chat is over
        cli.close_stdin()
        assert cli.finish() == 0, cli.output
    recorded = entries(path)
    first = recorded[0]["message"]
    assert isinstance(first, dict) and first["role"] == "system"  # the prompt and tools, first
    question = recorded[1]["id"]
    reply = recorded[2]["id"]  # the reply with the tool calls
    with LiveCli("chat", "--session", str(path)) as cli:
        cli.send_line("/tree")
        cli.wait_for(f"* {reply} assistant:")
        cli.send_line(f"/branch {reply}")
        cli.wait_for(f"/branch: {reply} is a reply whose tool calls have no results there")
        cli.send_line(f"/branch {question}")
        cli.wait_for(f"continuing from {question}: 2 messages")
        cli.send_line("What is 4*5? sleep 0 s")
        cli.wait_for("done · ")
        cli.send_line("/compact keep the numbers")
        cli.wait_for("compacted: ")
        cli.send_line(f"/load {path}")
        cli.wait_for("/load: this chat records to")
        cli.close_stdin()
        assert cli.finish() == 0, cli.output
    kinds = [e["type"] for e in entries(path)]
    assert kinds.count("compaction") == 1 and kinds[-1] == "compaction"
    parents = [e["parentId"] for e in entries(path)]
    assert parents.count(question) == 2  # the old continuation and the new branch
    with SessionFile.open(path, read_only=True) as session:
        messages = session.messages()
    # The compaction keeps the prompt and the tools in front of its summary.
    assert messages[0].role == "system"
    assert "compacted into the following summary" in str(messages[1].content)  # type: ignore[union-attr]


def test_a_chat_refuses_a_session_file_another_chat_writes(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    with LiveCli("chat", "--session", str(path)) as first:
        first.send_line("What is 2*3? sleep 0 s")
        first.wait_for("done · 2 turns")
        with LiveCli("chat", "--session", str(path), merge_stderr=True) as second:
            second.close_stdin()
            assert second.finish() != 0
        assert "open for writing in another process" in second.output
        assert "Traceback" not in second.output
        first.close_stdin()
        assert first.finish() == 0, first.output
