"""Worker and client processes for the end-to-end durable tests: ``pi-core worker`` serving
:mod:`_counting_agents`, and ``pi-core runs …`` commands against the same database."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from _cli_process import TIMEOUT, LiveCli, run_cli

from durable._counting_agents import STALL_ENV
from pi_core.durable import DurableRuns

__all__ = [
    "HERE",
    "READY",
    "TARGET",
    "TIMEOUT",
    "LiveCli",
    "client",
    "run_cli",
    "running_worker",
    "runs",
    "start_counting_run",
    "stop",
    "wait_until",
    "worker_env",
]

T = TypeVar("T")

HERE = Path(__file__).resolve().parent
TARGET = "durable._counting_agents:agents"
READY = f"serving {TARGET}"


def worker_env(*, stall: bool = False) -> dict[str, str]:
    """A worker's environment: tests/ importable; ``slow`` stalls if ``stall``."""
    paths = [str(HERE.parent), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p), STALL_ENV: "1" if stall else "0"}


@contextlib.contextmanager
def running_worker(
    database_url: str,
    executor_id: str,
    *,
    stall: bool = False,
    concurrency: int = 25,
    target: str = TARGET,
) -> Iterator[LiveCli]:
    """``pi-core worker`` serving ``target`` (the counting agents), ready; killed at the end if
    still alive."""
    args = ["worker", target, "--db", database_url]
    args += ["--executor-id", executor_id, "--concurrency", str(concurrency)]
    with LiveCli(*args, env=worker_env(stall=stall), merge_stderr=True) as worker:
        worker.wait_for(f"serving {target}")
        yield worker


def runs(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``pi-core runs ARGS --db URL``, to completion."""
    return run_cli("runs", *args, "--db", database_url, env=worker_env())


def start_counting_run(database_url: str, directory: Path) -> str:
    """Start a run of the counting agent counting into ``directory``; return its id."""
    directory.mkdir()
    params = json.dumps({"dir": str(directory)})
    started = runs(database_url, "start", "counting", "go", "--params", params)
    assert started.returncode == 0, started.stderr
    return started.stdout.strip()


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` (a file another process writes) until true; fail after the timeout."""
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def stop(worker: LiveCli) -> None:
    """SIGTERM, as a service manager stops a worker: it must shut down cleanly."""
    worker.process.terminate()
    assert worker.finish() == 0, worker.output
    assert "stopped" in worker.output


def client(database_url: str, call: Callable[[DurableRuns], Awaitable[T]]) -> T:
    """``call`` with a client of ``database_url`` in this process (quicker than a command)."""

    async def run() -> T:
        async with DurableRuns(database_url) as runs:
            with anyio.fail_after(TIMEOUT):
                return await call(runs)

    return anyio.run(run)
