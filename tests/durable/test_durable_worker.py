"""What a worker refuses: trio, no executor id, a database it cannot open."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from durable.durable_agents import agents
from durable.workers import WorkerProcess
from pi_core.durable import DurableAgents, DurableError, open_worker

pytestmark = pytest.mark.anyio


_TRIO_MISSING = pytest.mark.skipif(
    importlib.util.find_spec("trio") is None, reason="trio is not installed"
)


@pytest.mark.parametrize("anyio_backend", [pytest.param("trio", marks=_TRIO_MISSING)])
async def test_a_worker_refuses_to_run_on_trio(anyio_backend: str) -> None:
    with pytest.raises(DurableError, match="asyncio only"):
        async with open_worker(DurableAgents(), "sqlite:///unused.sqlite", executor_id="w"):
            pass  # pragma: no cover


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_worker_needs_an_explicit_executor_id(anyio_backend: str) -> None:
    with pytest.raises(ValueError, match="executor_id"):
        async with open_worker(agents, "sqlite:///unused.sqlite", executor_id=""):
            pass  # pragma: no cover


def test_a_worker_names_the_database_it_cannot_open(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'runs.sqlite'}"
    worker = WorkerProcess(url, "w", tmp_path / "worker.log")
    with pytest.raises(RuntimeError, match="did not start"):
        worker.start()
    log = (tmp_path / "worker.log").read_text()
    assert "DurableError: cannot open the database" in log
    assert "no/such/dir" in log
