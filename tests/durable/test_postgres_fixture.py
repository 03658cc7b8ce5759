"""The throwaway Postgres server the durable tests run against is real and isolated."""

from __future__ import annotations

import psycopg

from durable._postgres import PostgresServer


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
