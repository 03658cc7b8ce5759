"""Fixtures of the durable tests: one real Postgres server per session, a fresh database per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable._postgres import PostgresNotFoundError, PostgresServer, start_postgres

_database_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway server on 127.0.0.1 for the whole session; fails (never skips) without one."""
    try:
        server = start_postgres()
    except PostgresNotFoundError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the session's server."""
    return postgres_server.create_database(f"pi_core_{next(_database_numbers)}")


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of each backend: a SQLite file, then a database on the Postgres server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url
