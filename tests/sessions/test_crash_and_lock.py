"""Crash safety and the writer's lock, with real processes: a writer killed with SIGKILL in the
middle of an append leaves a file that opens with every whole entry and takes the next append;
a second process that opens a file being written is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pi_core import UserMessage
from pi_core.sessions import SessionFile, SessionFileError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and flock")

WRITER = """
import os, sys
from pi_core import UserMessage
from pi_core.sessions import SessionFile
session = SessionFile.open(sys.argv[1])
session.append(UserMessage("whole", timestamp=2))
# The next entry is cut short in mid-line, as a SIGKILL during a write leaves it.
real_write = os.write
def torn_write(fd, data):
    real_write(fd, bytes(data)[: len(data) // 2])
    print("torn", flush=True)
    sys.stdin.readline()  # killed here
os.write = torn_write
session.append(UserMessage("x" * 10_000, timestamp=3))
"""

HOLDER = """
import sys
from pi_core.sessions import SessionFile
session = SessionFile.open(sys.argv[1])
print("locked", flush=True)
sys.stdin.readline()
"""


def new_session(path: Path) -> None:
    with SessionFile.create(path) as session:
        session.append(UserMessage("first", timestamp=1))


def python(code: str, path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_writer_killed_mid_append_leaves_a_file_that_opens_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    new_session(path)
    with python(WRITER, path) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "torn\n"
        writer.send_signal(signal.SIGKILL)
        writer.wait(30)
    assert not path.read_bytes().endswith(b"\n")  # the torn line is there
    with SessionFile.open(path) as session:
        assert [m.content for m in session.messages()] == ["first", "whole"]  # type: ignore[union-attr]
        session.append(UserMessage("after the crash", timestamp=4))
    lines = path.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["session", *["message"] * 3]
    with SessionFile.open(path, read_only=True) as session:
        texts = [m.content for m in session.messages()]  # type: ignore[union-attr]
    assert texts == ["first", "whole", "after the crash"]


def test_a_second_writer_is_refused_and_a_reader_is_not(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    new_session(path)
    with python(HOLDER, path) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            with pytest.raises(SessionFileError, match="open for writing in another process"):
                SessionFile.open(path)
            with SessionFile.open(path, read_only=True) as reader:
                assert len(reader.messages()) == 1
        finally:
            holder.kill()
            holder.wait(30)
    with SessionFile.open(path) as session:  # the lock went with the process
        session.append(UserMessage("mine now", timestamp=5))


def test_a_new_session_is_created_at_its_first_user_message(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = SessionFile.create(path, id="chat-1")
    session.append_entry("model_change", provider="faux", modelId="faux-1")
    assert not path.exists()
    session.append(UserMessage("hi", timestamp=1))
    assert path.exists()
    kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert kinds == ["session", "model_change", "message"]
    with pytest.raises(FileExistsError):
        SessionFile.create(path)
    with pytest.raises(ValueError, match="invalid session id"):
        SessionFile.create(tmp_path / "other.jsonl", id="bad id!")
    session.close()
    os.unlink(path)
