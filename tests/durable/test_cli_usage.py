"""``pi-core worker`` and ``pi-core runs`` refuse bad input with a clear message and status 2."""

from __future__ import annotations

import pytest

from durable._workers import run_cli, worker_env


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["worker", "no_colon", "--db", "sqlite:///x", "--executor-id", "w"],
            "expected MODULE:ATTR",
        ),
        (
            ["worker", "json:dumps", "--db", "sqlite:///x", "--executor-id", "w"],
            "json:dumps is a function, not a DurableAgents",
        ),
        (
            ["worker", "durable._counting_agents:agents", "--executor-id", "w"],
            "no database: pass --db URL or set PI_CORE_DB",
        ),
        (
            ["worker", "durable._counting_agents:agents", "--db", "sqlite:///x"],
            "the following arguments are required: --executor-id",
        ),
        (["runs", "status", "some-run"], "no database"),
        (
            ["runs", "start", "counting", "go", "--db", "sqlite:///x", "--params", "[1]"],
            "--params must be a JSON object",
        ),
        (
            ["runs", "start", "counting", "go", "--db", "sqlite:///x", "--params", "{"],
            "--params is not JSON",
        ),
        (["runs", "start", "counting", " ", "--db", "sqlite:///x"], "the prompt is empty"),
    ],
)
def test_bad_input_is_a_usage_error(args: list[str], message: str) -> None:
    done = run_cli(*args, env={**worker_env(), "PI_CORE_DB": ""})
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "status", "some-run"],
        ["worker", "durable._counting_agents:agents", "--executor-id", "w"],
    ],
)
def test_an_unreachable_database_is_named_without_its_password(command: list[str]) -> None:
    url = "postgresql://pi:secret@127.0.0.1:1/runs"  # port 1: nothing listens there
    done = run_cli(*command, "--db", url, env=worker_env())
    assert done.returncode == 1
    assert "pi-core: error: cannot " in done.stderr  # DBOS may log its own traceback above it
    assert "database postgresql://pi:***@127.0.0.1:1/runs" in done.stderr
    assert "secret" not in done.stderr
