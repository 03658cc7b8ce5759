"""``SessionFile(..., fsync=True)``: every append is flushed to the disk before it returns.

A power cut cannot be staged in a test, so the test watches the system calls instead: a child
process appends under ``strace``, which records each ``fsync``. With ``fsync=True`` there is one
per append, and one of the directory when the first append creates the file; without it, none.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pi_core.sessions import SessionFile

APPENDS = """
import sys
from pi_core import UserMessage
from pi_core.sessions import SessionFile

path, fsync = sys.argv[1], sys.argv[2] == "on"
session = SessionFile.create(path, fsync=fsync)
for text in ("one", "two", "three"):
    session.append(UserMessage(text, timestamp=1))
session.close()
with SessionFile.open(path, fsync=fsync) as session:
    session.append(UserMessage("four", timestamp=1))
"""


def fsyncs(tmp_path: Path, mode: str) -> int:
    """The ``fsync`` calls a child appending four messages makes (``mode``: on or off)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("watching the system calls needs strace")
    trace = tmp_path / f"{mode}.trace"
    path = tmp_path / f"{mode}.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [strace, "-f", "-qq", "-e", "trace=fsync", "-o", str(trace)]
    command += [sys.executable, "-c", APPENDS, str(path), mode]
    subprocess.run(command, check=True, env=env, timeout=60)
    with SessionFile.open(path, read_only=True) as session:
        assert [m.content for m in session.messages()] == ["one", "two", "three", "four"]  # type: ignore[union-attr]
    return sum(1 for line in trace.read_text().splitlines() if "fsync(" in line)


def test_fsync_flushes_every_append_and_the_new_files_directory(tmp_path: Path) -> None:
    without = fsyncs(tmp_path, "off")
    # Four appends, and the directory once, when the first append created the file.
    assert fsyncs(tmp_path, "on") - without == 4 + 1
