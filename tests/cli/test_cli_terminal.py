"""``pi-core chat`` in a real terminal (tmux): the input line stays below the streaming output,
history and line editing work, a status line shows what runs, slash commands answer.

The pane is polled: the program runs in another process, so there is no event to wait on; every
wait is bounded.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux)")
BACKENDS = ["asyncio"] + (["trio"] if importlib.util.find_spec("trio") else [])
SRC = Path(__file__).resolve().parents[2] / "src"
TIMEOUT = 30.0


class Pane:
    """A tmux session running one command in a 100x30 terminal."""

    def __init__(self, command: str) -> None:
        self.name = f"pi-core-test-{uuid.uuid4().hex[:8]}"
        self._tmux("new-session", "-d", "-s", self.name, "-x", "100", "-y", "30", command)

    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        assert TMUX is not None
        return subprocess.run(
            [TMUX, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )

    def lines(self) -> list[str]:
        return self._tmux("capture-pane", "-p", "-t", self.name).stdout.rstrip("\n").split("\n")

    def wait_for(self, text: str) -> list[str]:
        """The pane's lines once one of them contains ``text``."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            lines = self.lines()
            if any(text in line for line in lines):
                return lines
            time.sleep(0.05)
        raise AssertionError(f"{text!r} never appeared:\n" + "\n".join(self.lines()))

    def wait_until_absent(self, text: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while any(text in line for line in self.lines()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(text in line for line in self.lines()), "\n".join(self.lines())

    def last_line(self) -> str:
        return [line for line in self.lines() if line.strip()][-1]

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def alive(self) -> bool:
        return self._tmux("has-session", "-t", self.name).returncode == 0

    def wait_until_gone(self) -> None:
        deadline = time.monotonic() + TIMEOUT
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not self.alive(), "\n".join(self.lines())

    def close(self) -> None:
        if self.alive():
            self._tmux("kill-session", "-t", self.name)


def start_chat(backend: str, state: Path, extra_env: str = "") -> Pane:
    """``pi-core chat`` in a pane, keeping its history under ``state`` (not the user's home)."""
    env = f"PYTHONPATH={shlex.quote(str(SRC))} NO_COLOR=1 TERM=xterm-256color"
    env += f" XDG_STATE_HOME={shlex.quote(str(state))} {extra_env}"
    command = f"env {env} {shlex.quote(sys.executable)} -m pi_core chat --backend {backend}"
    return Pane(f"cd {shlex.quote(os.getcwd())} && {command}")


@pytest.fixture
def chat(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pane]:
    pane = start_chat(getattr(request, "param", "asyncio"), tmp_path)
    try:
        yield pane
    finally:
        pane.close()


@pytest.mark.parametrize("chat", BACKENDS, indirect=True)
def test_the_input_line_stays_below_the_output_with_history_and_a_status_line(chat: Pane) -> None:
    chat.wait_for("you>")
    chat.send("What is 2*3? sleep 1 s", "Enter")
    chat.wait_for("running sleep · Ctrl-C aborts")  # the status line, while sleep runs
    lines = chat.wait_for("done · 2 turns · 3 tool calls")
    assert "- 2*3 = 6" in lines  # streamed text arrives whole, line by line
    chat.wait_until_absent("· Ctrl-C aborts")  # no status line once idle
    assert chat.last_line() == "you>"  # the input line is below everything printed
    chat.send("Up")  # history
    chat.wait_for("you> What is 2*3? sleep 1 s")
    assert chat.last_line() == "you> What is 2*3? sleep 1 s"
    chat.send("C-u", "/help", "Enter")  # line editing: Ctrl-U clears the line
    chat.wait_for("/load FILE")
    assert chat.last_line() == "you>"
    chat.send("C-d")
    chat.wait_until_gone()


def test_ctrl_c_in_the_terminal_aborts_the_turn(chat: Pane) -> None:
    chat.wait_for("you>")
    chat.send("please sleep 30 seconds", "Enter")
    chat.wait_for("→ now")
    chat.send("C-c")
    chat.wait_for("aborted · 1 turn · 3 tool calls")
    assert chat.last_line() == "you>"
    chat.send("C-c")  # Ctrl-C while idle quits
    chat.wait_until_gone()


def type_and_quit(pane: Pane, line: str) -> None:
    pane.wait_for("you>")
    pane.send(line, "Enter")
    pane.wait_for("/load FILE")  # /help answered
    pane.send("C-d")
    pane.wait_until_gone()


def test_the_history_is_kept_across_sessions(tmp_path: Path) -> None:
    first = start_chat("asyncio", tmp_path)
    try:
        type_and_quit(first, "/help")
    finally:
        first.close()
    assert "+/help" in (tmp_path / "pi-core" / "chat-history").read_text()
    second = start_chat("asyncio", tmp_path)
    try:
        second.wait_for("you>")
        second.send("Up")
        second.wait_for("you> /help")
        second.send("C-u", "C-d")
        second.wait_until_gone()
    finally:
        second.close()


def test_no_history_file_is_written_when_it_is_off(tmp_path: Path) -> None:
    pane = start_chat("asyncio", tmp_path, "PI_CORE_CHAT_HISTORY=off")
    try:
        type_and_quit(pane, "/help")
    finally:
        pane.close()
    assert list(tmp_path.iterdir()) == []
