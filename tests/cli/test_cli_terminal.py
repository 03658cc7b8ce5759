"""``pi-core chat`` in a real terminal (tmux): the input line stays below the streaming output,
history and line editing work, a status line shows what runs, slash commands answer.

The pane is polled: the program runs in another process, so there is no event to wait on; every
wait is bounded.
"""

from __future__ import annotations

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

from backends import BACKENDS

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux)")
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

    def wait_for_last_line(self, text: str) -> None:
        """Until the last line that is not blank reads ``text``: a redraw can lag the keys."""
        deadline = time.monotonic() + TIMEOUT
        while self.last_line() != text and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.last_line() == text, "\n".join(self.lines())

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


WITHOUT_PROMPT_TOOLKIT = (
    "import sys; sys.modules['prompt_toolkit'] = None; from pi_core.cli import main; "
    "sys.argv[0] = 'pi-core'; raise SystemExit(main())"
)
"""``pi-core`` as the default install has it: without the ``chat`` extra."""


def start_chat(
    backend: str,
    state: Path,
    extra_env: str = "",
    *,
    prompt_toolkit: bool = True,
    then: str = "",
) -> Pane:
    """``pi-core chat`` in a pane, keeping its history under ``state`` (not the user's home);
    ``then`` is a shell command run in the pane after it."""
    env = f"PYTHONPATH={shlex.quote(str(SRC))} NO_COLOR=1 TERM=xterm-256color"
    env += f" XDG_STATE_HOME={shlex.quote(str(state))} {extra_env}"
    program = "-m pi_core" if prompt_toolkit else f"-c {shlex.quote(WITHOUT_PROMPT_TOOLKIT)}"
    command = f"env {env} {shlex.quote(sys.executable)} {program} chat --backend {backend}"
    return Pane(f"cd {shlex.quote(os.getcwd())} && {command}{f'; {then}' if then else ''}")


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
    chat.wait_for("running sleep · Ctrl-C stops")  # the status line, while sleep runs
    lines = chat.wait_for("done · 2 turns · 3 tool calls")
    assert "- 2*3 = 6" in lines  # streamed text arrives whole, line by line
    chat.wait_until_absent("· Ctrl-C stops")  # no status line once idle
    assert chat.last_line() == "you>"  # the input line is below everything printed
    chat.send("Up")  # history
    # the line typed earlier is on screen already: only the last line shows the recalled one
    chat.wait_for_last_line("you> What is 2*3? sleep 1 s")
    chat.send("C-u", "/help", "Enter")  # line editing: Ctrl-U clears the line
    chat.wait_for("/load FILE")
    chat.wait_for_last_line("you>")
    chat.send("C-d")
    chat.wait_until_gone()


def test_ctrl_c_in_the_terminal_stops_then_aborts_the_turn(chat: Pane) -> None:
    chat.wait_for("you>")
    chat.send("please sleep 30 seconds", "Enter")
    chat.wait_for("→ now")
    chat.send("C-c")
    chat.wait_for("interrupted: stopping after this step")
    chat.wait_for("running sleep · stopping · Ctrl-C aborts")  # the status line says so
    chat.send("C-c")
    chat.wait_for("aborted · 1 turn · 3 tool calls")
    chat.wait_for_last_line("you>")
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


@pytest.fixture
def plain_chat(tmp_path: Path) -> Iterator[Pane]:
    pane = start_chat("asyncio", tmp_path, prompt_toolkit=False)
    try:
        yield pane
    finally:
        pane.close()


def test_without_the_extra_the_arrow_keys_edit_and_recall_lines(plain_chat: Pane) -> None:
    plain_chat.wait_for("line editing and history need prompt_toolkit: pip install ")
    plain_chat.wait_for("you>")
    plain_chat.send("What is 2*3? sleep 0 s", "Enter")
    plain_chat.wait_for("done · 2 turns · 3 tool calls")
    plain_chat.wait_for("you>")
    plain_chat.send("Up")  # the standard library's history
    plain_chat.wait_for("you> What is 2*3? sleep 0 s")
    plain_chat.send("Left", "Left", "BSpace", "1")  # and its line editing
    plain_chat.wait_for("you> What is 2*3? sleep 1 s")
    plain_chat.send("C-e", "C-u", "/help", "Enter")
    lines = plain_chat.wait_for("/load FILE")
    assert not any("^[" in line for line in lines), "\n".join(lines)  # no raw escape sequence
    plain_chat.wait_for_last_line("you>")
    plain_chat.send("C-d")
    plain_chat.wait_until_gone()


def test_without_the_extra_a_line_typed_during_a_run_steers_it(plain_chat: Pane) -> None:
    plain_chat.wait_for("you>")
    plain_chat.send("What is 2+2? sleep 1.5 seconds", "Enter")
    plain_chat.wait_for("→ now")
    plain_chat.send("hurry up", "Enter")
    plain_chat.wait_for("steering queued: hurry up")
    plain_chat.wait_for('You said: "hurry up". Noted.')
    plain_chat.send("C-d")
    plain_chat.wait_until_gone()


def test_tab_completes_the_slash_commands(chat: Pane) -> None:
    chat.wait_for("you>")
    chat.send("/mo", "Tab")
    chat.wait_for("you> /model")
    chat.send("Enter")
    chat.wait_for("model: pi-demo")
    chat.send("/h", "Tab")
    chat.wait_for("you> /help")  # completion runs in the background: wait for it
    chat.send("Enter")
    chat.wait_for("/load FILE")
    chat.send("C-d")
    chat.wait_until_gone()


def test_ctrl_c_leaves_no_stale_prompt_and_the_shell_starts_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    pane = start_chat("asyncio", tmp_path, then="printf SHELL; sleep 60")
    try:
        pane.wait_for("you>")
        pane.send("/he")
        pane.wait_for("you> /he")
        pane.send("C-c")  # while idle: quits
        lines = [line for line in pane.wait_for("SHELL") if line.strip()]
        assert lines[-2:] == ["interrupted: quitting", "SHELL"], "\n".join(lines)
    finally:
        pane.close()
