"""The cost of durable runs, on SQLite and on Postgres: ``python -m bench.durable``.

See :mod:`bench.durable.__main__` for what it measures and docs/performance.md for the results.
"""
