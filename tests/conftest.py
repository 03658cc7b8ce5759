"""Every async test runs on asyncio and on trio (when trio is installed; see backends.py)."""

from __future__ import annotations

import os
import socket
import sqlite3
import sys

# Runs check their invariants (the run's task group holds no other task while the model streams):
# set before pi_core is imported, which reads it once.
os.environ.setdefault("PI_CORE_DEBUG", "1")

import pytest
from hypothesis import HealthCheck, settings

from backends import BACKENDS

settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


DBOS_SQLITE_UNUSABLE = sys.version_info >= (3, 12) and sqlite3.sqlite_version_info < (3, 42, 0)
"""dbos 3.4 stamps its SQLite rows with ``unixepoch('subsec')`` on Python 3.12 and later, which
SQLite only has from 3.42: with an older library every launch fails (Postgres is unaffected)."""

_DURABLE_ON_SQLITE = (
    "tests/durable/test_durable_client.py::",
    "tests/durable/test_durable_crash.py::",
    "tests/durable/test_durable_subagent.py::",
    "tests/durable/test_durable_recording.py::",
    "tests/durable/test_durable_output.py::",
    "tests/durable/test_cli_runs_output.py::",
    "tests/durable/test_durable_outages.py::test_a_call_on_a_sqlite_file_locked_by_another_process_is_bounded",
    "tests/durable/test_bench_durable_smoke.py::",
    "tests/durable/test_cli_durable.py::test_cancel_resume_and_abort_from_the_shell",
    "tests/test_examples.py::test_durable_worker",
    "tests/test_docs_snippets.py::test_snippet_runs[docs/durable.md",
    "tests/ui/test_web_page.py::test_a_durable_run",
)
"""Tests that run durable runs on a SQLite file of their own."""


def _needs_dbos_on_sqlite(item: pytest.Item) -> bool:
    """A test of the list, or the SQLite case of a test on both databases (``database_url``)."""
    if item.nodeid.startswith(_DURABLE_ON_SQLITE):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("database_url") == "sqlite"


_PROCESS_TESTS = (
    "tests/durable/",
    "tests/ui/test_web_page.py",
    "tests/cli/",
    "tests/test_bench_instructions.py",
)
"""The tests that wait on real processes (workers, browsers, the CLI, valgrind) for seconds each.
They are marked ``processes`` and started first: pytest-xdist's workers (``--dist worksteal``,
as nox runs them) then share them out early and the quick tests fill the gaps, instead of one
worker running the last of them alone."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    processes = pytest.mark.processes
    for item in items:
        if item.nodeid.startswith(_PROCESS_TESTS):
            item.add_marker(processes)
    items.sort(key=lambda item: not item.nodeid.startswith(_PROCESS_TESTS))  # a stable sort
    if not DBOS_SQLITE_UNUSABLE:
        return
    skip = pytest.mark.skip(
        reason=f"dbos on Python 3.12+ needs SQLite >= 3.42; this Python has {sqlite3.sqlite_version}"
    )
    for item in items:
        if _needs_dbos_on_sqlite(item):
            item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens any more: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def node() -> str:
    """Node with the TypeScript Pi's packages, for interop tests (see tests/node_interop.py)."""
    from node_interop import find_node

    return find_node()
