"""``pi-core worker`` and ``pi-core runs`` refuse bad input with a clear message and status 2."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable._workers import run_cli, worker_env

SERVE = ["worker", "durable._counting_agents:agents"]


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
        (
            [*SERVE, "--db", "sqlite:///x", "--executor-id", "w", "--max-result-bytes", "0"],
            "--max-result-bytes must be at least 1",
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
    ("command", "said"),
    [
        (["runs", "status", "some-run", "--unreachable-after", "0.5"], "database unreachable: "),
        (["worker", "durable._counting_agents:agents", "--executor-id", "w"], "database "),
    ],
)
def test_an_unreachable_database_is_named_without_its_password(
    command: list[str], said: str
) -> None:
    url = "postgresql://pi:secret@127.0.0.1:1/runs"  # port 1: nothing listens there
    done = run_cli(*command, "--db", url, env=worker_env())
    assert done.returncode == 1
    assert "pi-core: error: " in done.stderr  # DBOS may log its own traceback above it
    assert f"{said}postgresql://pi:***@127.0.0.1:1/runs" in done.stderr
    assert "secret" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "status", "some-run"],
        ["worker", "durable._counting_agents:agents", "--executor-id", "w"],
    ],
)
def test_a_database_that_is_neither_sqlite_nor_postgres_is_refused(command: list[str]) -> None:
    done = run_cli(*command, "--db", "mysql://pi:secret@127.0.0.1/runs", env=worker_env())
    assert done.returncode == 1
    assert "pi-core: error: durable runs keep their records in SQLite or Postgres, not mysql" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr and "secret" not in done.stderr


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("raise RuntimeError('no config file')", "raised RuntimeError: no config file"),
        ("agents = (", "raised SyntaxError: "),
        (
            "from pi_core.durable import DurableAgents\nagents = DurableAgents()",
            "the DurableAgents defines no agent: a worker would serve nothing",
        ),
    ],
)
def test_a_worker_whose_agents_cannot_be_served_says_why_in_one_line(
    tmp_path: Path, source: str, said: str
) -> None:
    (tmp_path / "my_agents.py").write_text(source + "\n")
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    done = run_cli("worker", "my_agents:agents", "--db", url, "--executor-id", "w", env=env)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("pi-core: error: ") and said in line


@pytest.fixture(params=["sqlite", "postgres"])
def database_without_tables(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database no worker has used: a SQLite file with a table of its own, or a new Postgres
    database."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    path = tmp_path / "other.sqlite"
    # The connection's own context manager only commits; closing() closes it, which Python 3.13
    # checks when the object is collected (an unclosed one warns during some later test).
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.commit()
    return f"sqlite:///{path}"


@pytest.mark.parametrize(
    "command", [["list"], ["status", "some-run"], ["pending", "some-run"], ["start", "a", "go"]]
)
def test_a_database_no_worker_has_used_is_named_in_one_line(
    database_without_tables: str, command: list[str]
) -> None:
    done = run_cli("runs", *command, "--db", database_without_tables, env=worker_env())
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("pi-core: error: ") and "holds no durable runs" in line
    assert "no worker has used this database yet" in line
