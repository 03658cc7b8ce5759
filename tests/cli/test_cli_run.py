"""``pi-core run`` end to end, in subprocesses: the demo, JSON output, errors, Ctrl-C."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_process import LiveCli, cli_env, run_cli

from backends import BACKENDS
from json_events import load_events
from pi_core import ToolExecutionEnd, ToolExecutionStart
from pi_core.testing import check_event_grammar

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

PROMPT = "What is 2 + 3 * 4? Then sleep 0.3 seconds."


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_shows_the_demo_at_work(backend: str) -> None:
    done = run_cli("run", "--backend", backend, PROMPT)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for expected in (
        "pi-core · pi-demo (built-in demo model) · tools: calculate, read_file, list_dir, now, sleep, research",
        "you: What is 2 + 3 * 4?",
        "[thinking] ",  # thinking is labelled, not dimmed, when stdout is not a terminal
        '→ sleep {"seconds": 0.3}',
        '→ calculate {"expression": "2 + 3 * 4"}',
        "✓ calculate: 2 + 3 * 4 = 14",
        "⋯ sleep: 0.25 / 0.3 s",
        "✓ sleep: slept 0.3 s",
        "── turn 2",
        "done · 2 turns · 3 tool calls · ",
    ):
        assert expected in out
    assert "\x1b[" not in out
    assert out.index("✓ calculate") < out.index("✓ sleep")  # completion order


def test_a_tool_error_is_shown_in_the_view_and_its_traceback_only_with_verbose() -> None:
    prompt = "What is 1/0? Then sleep 0.1 seconds."
    quiet = run_cli("run", prompt)
    assert quiet.returncode == 0, quiet.stderr
    assert '→ calculate {"expression": "1/0"}' in quiet.stdout
    assert "✗ calculate: division by zero" in quiet.stdout
    assert quiet.stderr == ""
    verbose = run_cli("run", "--verbose", prompt)
    assert "WARNING pi_core: Tool calculate raised CalculationError (call " in verbose.stderr
    assert "Traceback (most recent call last):" in verbose.stderr
    assert verbose.stdout.count("✗ calculate: division by zero") == 1


def test_json_compact_updates_carry_the_wire_event_only() -> None:
    full = run_cli("run", "--json", PROMPT)
    compact = run_cli("run", "--json-compact", PROMPT)
    assert compact.returncode == 0, compact.stderr
    lines = [json.loads(line) for line in compact.stdout.splitlines()]
    updates = [line for line in lines if line["type"] == "message_update"]
    assert updates and all(set(line) == {"type", "assistantMessageEvent"} for line in updates)
    assert all("partial" not in line["assistantMessageEvent"] for line in updates)
    first_reply = next(
        line["message"]
        for line in lines
        if line["type"] == "message_end" and line["message"]["role"] == "assistant"
    )
    text = "".join(
        line["assistantMessageEvent"]["delta"]
        for line in updates
        if line["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert text.startswith(next(b["text"] for b in first_reply["content"] if b["type"] == "text"))
    others = [line for line in lines if line["type"] != "message_update"]
    assert [line["type"] for line in others] == [
        json.loads(line)["type"]
        for line in full.stdout.splitlines()
        if json.loads(line)["type"] != "message_update"
    ]
    assert len(compact.stdout) < len(full.stdout) / 2


def test_json_prints_one_event_per_line() -> None:
    done = run_cli("run", "--json", PROMPT)
    assert done.returncode == 0, done.stderr
    events = load_events(done.stdout.splitlines())
    check_event_grammar(events)
    started = [e.tool_name for e in events if isinstance(e, ToolExecutionStart)]
    ended = [e.tool_name for e in events if isinstance(e, ToolExecutionEnd)]
    assert started == ["sleep", "calculate", "now"]
    assert ended[-1] == "sleep"  # started first, finished last: the results came out of order
    assert sum(e.type == "turn_start" for e in events) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "usage: pi-core"),
        (["run"], "the following arguments are required: PROMPT"),
        (["run", "   "], "the prompt is empty"),
        (["run", "--provider", "nope", "hi"], "invalid choice: 'nope'"),
        (["run", "--thinking", "most", "hi"], "invalid choice: 'most'"),
        (["run", "--provider", "openai", "hi"], "--model is required with --provider openai"),
        (["run", "--provider", "anthropic", "--model", "m", "hi"], "ANTHROPIC_API_KEY is not set"),
        (
            ["run", "--provider", "openai", "--model", "m", "--api-key-env", "NOPE_X", "hi"],
            "NOPE_X",
        ),
        (["run", "--model", "nope/x", "hi"], "Unknown provider 'nope'"),
        (
            ["run", "--model", "anthropic/claude-sonet-4-5", "hi"],
            "did you mean 'claude-sonnet-4-5'",
        ),
        (["run", "--model", "anthropic/claude-sonnet-4-5", "hi"], "ANTHROPIC_API_KEY is not set"),
        (
            ["run", "--model", "gpt-4o", "hi"],
            "A model name is provider/id (e.g. 'openai/gpt-4o-mini'), not 'gpt-4o'; "
            "did you mean 'openai/gpt-4o'",
        ),
        (
            ["run", "--model", "amazon-bedrock/amazon.nova-pro-v1:0", "hi"],
            "no provider for api 'bedrock-converse-stream'",
        ),
        (["chat", "--tool-execution", "sometimes"], "invalid choice: 'sometimes'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


def test_a_model_error_exits_1(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    args = ("run", "--provider", "openai", "--model", "m", "--base-url", base_url, "hi")
    done = run_cli(*args, env={"OPENAI_API_KEY": "test-key"})
    assert done.returncode == 1, done.stderr
    assert "error: " in done.stdout
    assert "error · 1 turn · 0 tool calls" in done.stdout
    assert "test-key" not in done.stdout + done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_stops_the_run_after_its_step(backend: str) -> None:
    with LiveCli("run", "--backend", backend, "What is 2+2? sleep 1.5 seconds") as cli:
        cli.wait_for("→ now")  # the batch has started: sleep is running
        cli.interrupt()
        cli.wait_for("interrupted: stopping after this step (Ctrl-C again to abort the run)")
        code = cli.finish()
    out = cli.output
    assert code == 0, out
    assert "✓ sleep" in out  # the step finished ...
    assert "done · 1 turn · 3 tool calls" in out  # ... and no request followed it


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_second_ctrl_c_aborts_the_run_with_a_close_out(backend: str) -> None:
    with LiveCli("run", "--backend", backend, "please sleep 30 seconds") as cli:
        cli.wait_for("→ now")  # the batch has started: sleep is running
        cli.interrupt()
        cli.wait_for("interrupted: stopping after this step")
        cli.interrupt()
        code = cli.finish()
    out = cli.output
    assert code == 130, out
    assert "interrupted: aborting the run" in out
    assert "✗ sleep: Operation aborted" in out
    assert "aborted · 1 turn · 3 tool calls" in out


def test_ctrl_c_while_the_model_streams() -> None:
    with LiveCli("run", "please sleep 30 seconds") as cli:
        cli.wait_for("[thinking]")  # the first reply is streaming (for a few hundred ms more)
        cli.interrupt()
        cli.wait_for("interrupted: stopping")
        cli.interrupt()
        code = cli.finish()
    assert code == 130
    if "✗ sleep" in cli.output:  # pragma: no cover - the machine was too slow to interrupt it
        assert "✗ sleep: Operation aborted" in cli.output  # ... so the batch was aborted instead
    else:
        assert "aborted: Request was aborted" in cli.output
        assert "aborted · 1 turn · 0 tool calls" in cli.output


def test_a_closed_stdout_stops_the_run_quietly() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "pi_core", "run", PROMPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert child.stdout is not None and child.stderr is not None
    with child, child.stderr:
        assert child.stdout.readline().startswith(b"pi-core ")
        child.stdout.close()  # like `| head -1`: the paced run goes on writing into a closed pipe
        code = child.wait(timeout=60)
        errors = child.stderr.read()
    assert code == 1
    assert errors == b""


def test_the_console_script_and_version() -> None:
    script = shutil.which("pi-core", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the pi-core script is not installed next to this interpreter")
    done = subprocess.run(
        [script, "--version"], capture_output=True, text=True, env=cli_env(), check=False
    )
    assert done.returncode == 0
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    version = re.search(r'^version = "(.+)"$', pyproject, flags=re.M)
    assert version is not None
    assert done.stdout.split() == ["pi-core", version[1]]


def test_timeout_gives_up_on_a_server_that_never_answers_and_the_banner_shows_its_url() -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        base_url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        args = ("run", "--provider", "openai", "--model", "m", "--base-url", base_url)
        done = run_cli(*args, "--timeout", "0.5", "hi", env={"OPENAI_API_KEY": "test-key"})
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"pi-core · m via openai-completions at {base_url} · tools: ")
    assert "error: Request timed out" in done.stdout


def test_a_closed_stdout_is_recognised_through_several_failed_tasks() -> None:
    from pi_core.cli._app import _is_broken_pipe
    from pi_core.nursery import ConcurrentTaskError, unwrap_single_exception

    def raise_group(*errors: BaseException) -> BaseException:
        try:
            with unwrap_single_exception():
                raise BaseExceptionGroup("tasks", list(errors))
        except BaseException as exc:
            return exc
        raise AssertionError("unreachable")

    both = raise_group(BrokenPipeError(), BrokenPipeError())
    assert isinstance(both, ConcurrentTaskError)
    assert _is_broken_pipe(both)
    assert not _is_broken_pipe(raise_group(BrokenPipeError(), ValueError("real")))
