"""Worker processes for the durable tests: real processes, started, killed and restarted."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
from dbos import DBOSClient

from durable.durable_agents import lines

AGENTS_SCRIPT = Path(__file__).resolve().parent / "durable_agents.py"
_SRC = Path(__file__).resolve().parents[2] / "src"


class WorkerProcess:
    """``durable_agents.py`` serving the test agents from ``database_url`` as ``executor_id``."""

    def __init__(self, database_url: str, executor_id: str, log: Path) -> None:
        self.database_url = database_url
        self.executor_id = executor_id
        self.log = log
        self.process: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 30) -> WorkerProcess:
        """Start the process and wait until it serves (it prints ``ready``)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_SRC), env.get("PYTHONPATH")]))
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(AGENTS_SCRIPT), self.database_url, self.executor_id],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=env,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # bounded: the process exits on any failure
        if line.strip() != "ready":
            self.process.wait(timeout)
            self._close_pipe()
            raise RuntimeError(f"worker did not start: {self.log.read_text()[-3000:]}")
        return self

    def kill(self) -> None:
        """SIGKILL: no clean-up, no chance to record anything more."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._close_pipe()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()


async def wait_until_steps_recorded(url: str, run_id: str, names: list[str]) -> None:
    """Wait until steps of these names have recorded outputs (polled: another process writes)."""
    client = await anyio.to_thread.run_sync(functools.partial(DBOSClient, system_database_url=url))
    try:
        while True:
            steps = await anyio.to_thread.run_sync(client.list_workflow_steps, run_id)
            done = sorted(
                step["function_name"] for step in steps if step["completed_at_epoch_ms"] is not None
            )
            if all(done.count(name) >= names.count(name) for name in names):
                return
            await anyio.sleep(0.05)
    finally:
        await anyio.to_thread.run_sync(client.destroy)


async def wait_for_line(directory: Path, name: str, line: str) -> None:
    while line not in lines(directory, name):  # noqa: ASYNC110  # written by another process
        await anyio.sleep(0.05)
