"""The throwaway Postgres server the durable tests run against is real, isolated, and cleaned up
even after a test process was killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

from durable._postgres import PostgresServer, find_bindir, remove_leftovers, server_user


def test_each_test_gets_its_own_empty_database(postgres_server: PostgresServer) -> None:
    first = postgres_server.create_database("fixture_check_a")
    second = postgres_server.create_database("fixture_check_b")
    with psycopg.connect(first, autocommit=True) as connection:
        connection.execute("CREATE TABLE marks (n int)")
        connection.execute("INSERT INTO marks VALUES (1)")
        assert connection.execute("SELECT count(*) FROM marks").fetchone() == (1,)
    with psycopg.connect(second, autocommit=True) as connection:
        tables = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'marks'"
        ).fetchone()
    assert tables == (0,)
    assert first.startswith(f"postgresql://postgres@127.0.0.1:{postgres_server.port}/")


def test_the_server_of_a_killed_test_process_is_stopped_and_deleted_by_the_next() -> None:
    tests = Path(__file__).resolve().parents[1]
    child = "import sys; from durable._postgres import start_postgres; print(start_postgres().root)"
    with subprocess.Popen(
        [sys.executable, "-c", child + "; sys.stdout.flush(); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), *sys.path])},
    ) as owner:
        assert owner.stdout is not None
        root = Path(owner.stdout.readline().strip())
        owner.kill()  # as a timeout kills a test run: no teardown
        owner.wait(timeout=30)
    assert (root / "data" / "postmaster.pid").exists()  # the detached server outlived it

    remove_leftovers(find_bindir(), server_user())
    assert not root.exists()
