"""Where ``pi-core chat`` keeps its input history: the XDG state directory, the user's choice of
file, or none."""

from __future__ import annotations

from pathlib import Path

from pi_core.cli._terminal_input import history_file


def test_the_history_lives_under_the_xdg_state_directory() -> None:
    assert history_file({"XDG_STATE_HOME": "/state"}) == Path("/state/pi-core/chat-history")


def test_without_an_absolute_xdg_state_directory_it_is_under_local_state() -> None:
    expected = Path.home() / ".local" / "state" / "pi-core" / "chat-history"
    assert history_file({}) == expected
    assert history_file({"XDG_STATE_HOME": "relative/dir"}) == expected


def test_the_variable_names_the_file_or_turns_the_history_off() -> None:
    chosen = {"PI_CORE_CHAT_HISTORY": "~/h.txt", "XDG_STATE_HOME": "/state"}
    assert history_file(chosen) == Path.home() / "h.txt"
    assert history_file({"PI_CORE_CHAT_HISTORY": "off"}) is None
    assert history_file({"PI_CORE_CHAT_HISTORY": ""}) is None
