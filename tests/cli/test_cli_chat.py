"""``pi-core chat`` end to end, driven through a pipe: prompts, steering, Ctrl-C, end of input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs
import pytest
from _cli_process import LiveCli, run_cli

from backends import BACKENDS
from pi_core.cli._chat import model_text
from pi_core.models import get_model


def test_a_piped_prompt_is_answered_before_the_end_of_input_exits() -> None:
    done = run_cli("chat", stdin="What is 6*7? sleep 0 s\n")
    assert done.returncode == 0, done.stderr
    assert "you: What is 6*7? sleep 0 s" in done.stdout  # piped input is echoed
    assert "✓ calculate: 6*7 = 42" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("done · 2 turns · 3 tool calls")


def test_an_empty_input_just_exits() -> None:
    done = run_cli("chat", stdin="")
    assert done.returncode == 0
    assert "turn" not in done.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_line_typed_while_the_agent_works_steers_it(backend: str) -> None:
    with LiveCli("chat", "--backend", backend) as cli:
        cli.send_line("What is 2+2? sleep 1.5 seconds")
        cli.wait_for("→ now")  # the tool batch runs, sleep for 1.5 s
        cli.send_line("hurry up")
        cli.wait_for("steering queued: hurry up")
        cli.close_stdin()  # the end of input waits for the running turn
        code = cli.finish()
    out = cli.output
    assert code == 0, out
    assert "» queued message: hurry up" in out
    assert 'You said: "hurry up". Noted.' in out
    assert out.index("✓ sleep") < out.index("» queued message")  # injected after the batch
    assert "done · 2 turns · 3 tool calls" in out


@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_aborts_the_turn_and_the_chat_goes_on(backend: str) -> None:
    with LiveCli("chat", "--backend", backend) as cli:
        cli.send_line("please sleep 30 seconds")
        cli.wait_for("→ now")
        cli.interrupt()
        cli.wait_for("interrupted: stopping after this step (Ctrl-C again to abort the turn)")
        cli.interrupt()
        cli.wait_for("aborted · 1 turn · 3 tool calls")
        cli.send_line("and now 3*3, sleep 0 s")
        cli.wait_for("done · ")
        cli.close_stdin()
        code = cli.finish()
    out = cli.output
    assert code == 0, out
    assert "interrupted: aborting the turn" in out
    assert "✗ sleep: Operation aborted" in out
    assert "✓ calculate: 3*3 = 9" in out


@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_stops_the_turn_after_its_step_and_a_line_typed_then_is_the_next_prompt(
    backend: str,
) -> None:
    with LiveCli("chat", "--backend", backend) as cli:
        cli.send_line("What is 2+2? sleep 1.5 seconds")
        cli.wait_for("→ now")
        cli.interrupt()
        cli.wait_for("interrupted: stopping after this step")
        cli.send_line("and now 3*3, sleep 0 s")
        cli.wait_for("done · 1 turn · 3 tool calls")  # the stopped turn: no second request
        cli.wait_for("you: and now 3*3, sleep 0 s")  # the line typed meanwhile: a prompt
        cli.wait_for("done · ")
        cli.close_stdin()
        code = cli.finish()
    out = cli.output
    assert code == 0, out
    assert "✓ sleep" in out
    assert "steering queued" not in out


def test_ctrl_c_while_idle_quits_with_130() -> None:
    with LiveCli("chat") as cli:
        cli.send_line("1+1, sleep 0 s")
        cli.wait_for("done · ")
        cli.interrupt()
        code = cli.finish()
    assert code == 130
    assert "interrupted: quitting" in cli.output


def test_commands_between_turns_and_turn_numbers_that_go_on() -> None:
    with LiveCli("chat") as cli:
        cli.send_line("What is 2*3? sleep 0 s")
        cli.wait_for("done · 2 turns")
        cli.send_line("/help")
        cli.wait_for("/model [ID]")
        cli.send_line("/model")
        assert cli.wait_for("model: ").strip() == "model: pi-demo (pi-core demo model)"
        cli.send_line("/model pi-demo-2")
        assert cli.wait_for("model: ").strip() == "model: pi-demo-2 · provider pi-demo"
        cli.send_line("/nope")
        cli.wait_for("unknown command /nope; /help lists the commands")
        cli.send_line("/clear")
        cli.wait_for("conversation cleared")
        cli.send_line("And 4*5? sleep 0 s")
        cli.wait_for("done · 2 turns")  # the summary counts the run's own turns
        cli.close_stdin()
        code = cli.finish()
    out = cli.output
    assert code == 0, out
    assert [line for line in out.splitlines() if line.startswith("── turn")] == [
        "── turn 1",
        "── turn 2",
        "── turn 3",
        "── turn 4",
    ]
    assert "✓ calculate: 4*5 = 20" in out


def test_a_command_while_the_agent_works_is_not_taken_for_steering() -> None:
    with LiveCli("chat") as cli:
        cli.send_line("What is 2+2? sleep 1.5 seconds")
        cli.wait_for("→ now")
        cli.send_line("/clear")
        cli.wait_for("commands work between turns; Ctrl-C stops this one")
        cli.close_stdin()
        code = cli.finish()
    assert code == 0, cli.output
    assert "queued message" not in cli.output


def test_save_writes_a_pi_session_file_and_load_continues_from_it(tmp_path: Path) -> None:
    session = tmp_path / "chat.jsonl"
    with LiveCli("chat") as cli:
        cli.send_line("What is 2*3? sleep 0 s")
        cli.wait_for("done · 2 turns")
        cli.send_line(f"/save {session}")
        cli.wait_for(f"saved 7 messages to {session}")
        cli.send_line("/clear")
        cli.wait_for("conversation cleared")
        cli.send_line(f"/load {session}")
        cli.wait_for(f"loaded 7 messages from {session}")
        cli.send_line(f"/load {tmp_path / 'missing.jsonl'}")
        cli.wait_for("/load failed: ")
        cli.close_stdin()
        assert cli.finish() == 0, cli.output
    header, *entries = [json.loads(line) for line in session.read_text().splitlines()]
    assert header["type"] == "session" and header["version"] == 3
    assert isinstance(header["id"], str) and header["cwd"]
    assert [entry["type"] for entry in entries] == ["message"] * 7
    assert [entry["parentId"] for entry in entries] == [None] + [e["id"] for e in entries[:-1]]
    roles = [entry["message"]["role"] for entry in entries]
    # The system prompt and the tools come first, as the Pi coding agent writes them.
    assert roles[0] == "system" and entries[0]["message"]["toolsAdded"]
    assert entries[0]["message"]["content"].startswith("You are the pi-core demo assistant.")
    assert roles[1:] == ["user", "assistant", "toolResult", "toolResult", "toolResult", "assistant"]
    assert entries[1]["message"]["content"] == [{"type": "text", "text": "What is 2*3? sleep 0 s"}]


def test_a_hostile_session_file_is_refused_and_the_chat_goes_on(tmp_path: Path) -> None:
    header = json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"})
    own_parent = {"type": "message", "id": "a", "parentId": "a", "timestamp": "t", "message": {}}
    (tmp_path / "cycle.jsonl").write_text(f"{header}\n{json.dumps(own_parent)}\n")
    (tmp_path / "deep.jsonl").write_text(f"{header}\n{'[' * 100_000}{']' * 100_000}\n")
    os.mkfifo(tmp_path / "fifo")
    with LiveCli("chat") as cli:
        cli.send_line("What is 2*3? sleep 0 s")
        cli.wait_for("done · 2 turns")
        cli.send_line(f"/load {tmp_path / 'cycle.jsonl'}")
        cli.wait_for("line 2 has the parentId 'a', which names no earlier entry")
        cli.send_line(f"/load {tmp_path / 'deep.jsonl'}")
        cli.wait_for("line 2 is JSON nested too deeply")
        cli.send_line(f"/load {tmp_path / 'fifo'}")
        cli.wait_for("fifo is not a regular file")
        cli.send_line(f"/save {tmp_path / 'kept.jsonl'}")
        cli.wait_for("saved 7 messages")  # the conversation is still there
        cli.close_stdin()
        assert cli.finish() == 0, cli.output
    assert "Traceback" not in cli.output


def test_model_text_names_each_of_id_name_provider_and_api_once() -> None:
    model = get_model("openai", "gpt-4o-mini")
    assert model_text(model) == f"gpt-4o-mini ({model.name}) · provider openai · api {model.api}"
    same = attrs.evolve(model, id="x", name="x", provider="x", api="x")
    assert model_text(same) == "x"
