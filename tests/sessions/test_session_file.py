"""Session files: written as the Pi coding agent writes them, read along the branch the file ends
on (version 1 files without ids included), and every kind of bad input refused with a
``SessionFileError`` naming its line."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_core import AgentMessage, AssistantMessage, PiCoreError, TextContent, UserMessage
from pi_core.serialization import to_dict
from pi_core.sessions import MAX_LINE_BYTES, SessionFile, SessionFileError


def save_session(path: Path, messages: list[AgentMessage]) -> None:
    with SessionFile.create(path) as session:
        for message in messages:
            session.append(message)
        session.flush()


def load_session(path: Path) -> list[AgentMessage]:
    with SessionFile.open(path, read_only=True) as session:
        return session.messages()


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


def message_entry(id: str, parent: object, message: object = None) -> dict[str, Any]:
    return {
        "type": "message",
        "id": id,
        "parentId": parent,
        "timestamp": "t",
        "message": to_dict(UserMessage(id, timestamp=1)) if message is None else message,
    }


def test_a_text_with_a_unicode_line_separator_loads_back(tmp_path: Path) -> None:
    messages: list[AgentMessage] = [UserMessage("one\u2028two\x1cthree", timestamp=1)]
    save_session(tmp_path / "s.jsonl", messages)
    assert load_session(tmp_path / "s.jsonl") == messages


def test_lines_the_fast_parser_refuses_are_read_as_json_reads_them(tmp_path: Path) -> None:
    # JSON.stringify writes a lone surrogate as an escape; 400 levels of nesting are more than
    # the fast parser takes, and fewer than the limit of a session file.
    lone = message_entry("a", None, to_dict(UserMessage("half \ud83d of a pair", timestamp=1)))
    nested: Any = "bottom"
    for _ in range(400):
        nested = [nested]
    deep = {"type": "custom", "id": "b", "parentId": "a", "timestamp": "t", "data": nested}
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [HEADER, lone, deep]) + "\n")
    with SessionFile.open(path, read_only=True) as session:
        assert session.messages() == [UserMessage("half \ud83d of a pair", timestamp=1)]
        assert session.entry("b")["data"] == nested


@pytest.mark.parametrize(
    ("entries", "error"),
    [
        ([message_entry("a", "a")], "line 2 has the parentId 'a', which names no earlier entry"),
        (
            [message_entry("a", "c"), message_entry("b", "a"), message_entry("c", "b")],
            "line 2 has the parentId 'c', which names no earlier entry",
        ),
        (
            [message_entry("a", None), message_entry("b", "nowhere")],
            "line 3 has the parentId 'nowhere', which names no earlier entry",
        ),
        (
            [message_entry("a", None), message_entry("b", "a"), message_entry("a", "b")],
            "line 4 has the id 'a', which an earlier entry has",
        ),
    ],
    ids=["its own parent", "a ring of three", "dangling", "an id used twice"],
)
def test_a_parent_id_naming_no_earlier_entry_is_refused(
    tmp_path: Path, entries: list[dict[str, Any]], error: str
) -> None:
    write_lines(tmp_path / "s.jsonl", [HEADER, *entries])
    with pytest.raises(SessionFileError, match=error):
        load_session(tmp_path / "s.jsonl")


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ([DEEP], "line 1 is JSON nested too deeply"),
        ([json.dumps(HEADER), DEEP], "line 2 is JSON nested too deeply"),
        ([json.dumps(HEADER), "{not json", "{}"], "line 2 is not JSON"),
        ([json.dumps(HEADER), "[1]"], "line 2 is not an entry"),
        (
            [json.dumps(HEADER), json.dumps(message_entry("a", ["x"]))],
            "line 2 has a parentId that is not a string",
        ),
        ([json.dumps(HEADER), json.dumps(message_entry("a", None, "hi"))], "malformed"),
        (
            [json.dumps(HEADER), json.dumps(message_entry("a", None, {"role": 5}))],
            "malformed",
        ),
        (
            [
                json.dumps(HEADER),
                json.dumps(message_entry("a", None, {"role": "user", "content": 5})),
            ],
            "line 2 is a malformed entry",
        ),
        ([json.dumps(HEADER), json.dumps({"type": "message", "id": "a"})], "lacks .*'message'"),
        (
            [json.dumps(HEADER), json.dumps({"type": "compaction", "id": "a", "timestamp": "t"})],
            "lacks .*'summary'",
        ),
        (
            [json.dumps(HEADER), json.dumps({"type": "custom_message", "id": "a", "content": 3})],
            "lacks|malformed",
        ),
    ],
    ids=[
        "deep header",
        "deep entry",
        "not json",
        "not an object",
        "a list as parentId",
        "a string as message",
        "a number as role",
        "a number as content",
        "no message",
        "a compaction without summary",
        "a custom message without timestamp",
    ],
)
def test_an_entry_of_the_wrong_shape_is_a_session_file_error(
    tmp_path: Path, lines: list[str], error: str
) -> None:
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SessionFileError, match=error):
        load_session(tmp_path / "s.jsonl")


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_bytes(json.dumps(HEADER).encode() + b"\n\xff\xfe\n")
    with pytest.raises(SessionFileError, match="line 2 is not UTF-8 text"):
        load_session(tmp_path / "s.jsonl")


def test_a_100_mb_line_is_refused_naming_it(tmp_path: Path) -> None:
    with (tmp_path / "big.jsonl").open("wb") as file:
        file.write(json.dumps(HEADER).encode() + b"\n")
        file.truncate(100 * 1024 * 1024)  # sparse: no disk space
    with pytest.raises(SessionFileError, match=f"line 2 is longer than {MAX_LINE_BYTES} bytes"):
        load_session(tmp_path / "big.jsonl")


def test_a_newer_format_version_is_refused(tmp_path: Path) -> None:
    write_lines(tmp_path / "s.jsonl", [{**HEADER, "version": 4}])
    with pytest.raises(SessionFileError, match="line 1 is session format version 4, newer"):
        load_session(tmp_path / "s.jsonl")


def test_an_unknown_entry_kind_is_kept_and_skipped(tmp_path: Path) -> None:
    later = {"type": "from_the_future", "id": "f", "parentId": "a", "timestamp": "t", "x": [1]}
    write_lines(
        tmp_path / "s.jsonl",
        [{**HEADER, "version": 3}, message_entry("a", None), later, message_entry("b", "f")],
    )
    with SessionFile.open(tmp_path / "s.jsonl") as session:
        assert later in session.entries
        assert [getattr(m, "content", None) for m in session.messages()] == ["a", "b"]
        session.append(UserMessage("c", timestamp=3))
    assert later in SessionFile.open(tmp_path / "s.jsonl", read_only=True).entries


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_an_endless_device_is_refused() -> None:
    with pytest.raises(SessionFileError, match="is not a regular file"):
        load_session(Path("/dev/zero"))


def returns_at_once(call: Callable[[], object], unblock: Callable[[], None]) -> BaseException:
    """What ``call`` raised, from a thread; ``unblock`` frees the thread if it hangs instead."""
    raised: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            raised.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(30):
        unblock()
        pytest.fail(f"{call} blocked")
    assert raised, f"{call} returned"
    return raised[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_waiting_for_a_writer_or_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def open_the_other_end(flags: int) -> Callable[[], None]:
        return lambda: os.close(os.open(fifo, flags | os.O_NONBLOCK))

    loading = returns_at_once(lambda: load_session(fifo), open_the_other_end(os.O_WRONLY))
    assert isinstance(loading, SessionFileError) and "not a regular file" in str(loading)
    saving = returns_at_once(lambda: save_session(fifo, []), open_the_other_end(os.O_RDONLY))
    assert isinstance(saving, OSError)  # it exists: a new session is not written over it


def test_a_session_file_error_is_a_pi_core_error() -> None:
    assert issubclass(SessionFileError, PiCoreError)
