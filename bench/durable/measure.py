"""The measurements of ``python -m bench.durable``, each run in a process of its own.

* :func:`cpu_per_operation`: in one process (a worker and a client), the CPU time of durable runs
  started and awaited one after another, against bare DBOS workflows of the same number of
  recorded operations (no-op steps), enqueued and awaited the same way; and the wall time of each
  against the same run in-process, without durability.
* :func:`throughput`: runs per second when ``workers`` worker processes serve a batch of runs
  started at once by a client.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import anyio
from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowHandleAsync

from pi_core.durable import DurableRuns, open_worker

from .agents import AGENT, agents, in_process_run

BARE_QUEUE = "bench-bare-steps"
BARE_WORKFLOW = "bench-bare-steps"
PROMPT = "go"
READY = "serving bench.durable.agents:agents"

QUEUE_POLLING_SECONDS = 0.1
"""As often as a pi_core worker polls its queue, so that both wait alike."""


@DBOS.step()
async def _noop_step(index: int) -> int:
    return index


@DBOS.workflow(name=BARE_WORKFLOW)
async def bare_steps(operations: int) -> int:
    """A workflow of ``operations`` no-op steps: what DBOS costs without any agent."""
    for index in range(operations):
        await _noop_step(index)
    return operations


class Clock:
    """CPU time of this process (all its threads) and wall time, from a start."""

    def __init__(self) -> None:
        self.cpu = time.process_time()
        self.wall = time.perf_counter()

    def lap(self, count: int) -> tuple[float, float]:
        """(CPU ms, wall ms) per one of ``count`` things since the start."""
        cpu = (time.process_time() - self.cpu) * 1000 / count
        wall = (time.perf_counter() - self.wall) * 1000 / count
        return cpu, wall


async def cpu_per_operation(database_url: str, runs: int) -> dict[str, Any]:
    """Durable runs against bare DBOS workflows of as many operations, one after another."""
    async with open_worker(agents, database_url, executor_id="bench-cpu"):
        await DBOS.register_queue_async(
            BARE_QUEUE, worker_concurrency=25, polling_interval_sec=QUEUE_POLLING_SECONDS
        )
        client = DurableRuns(database_url)
        bare_client = DBOSClient(system_database_url=database_url)
        try:
            run_id = await _durable_run(client)  # warm-up; and the shape of a run
            operations = len(await DBOS.list_workflow_steps_async(run_id))
            await _bare_run(bare_client, operations)
            clock = Clock()
            for _ in range(runs):
                await _durable_run(client)
            durable_cpu, durable_wall = clock.lap(runs)
            clock = Clock()
            for _ in range(runs):
                await _bare_run(bare_client, operations)
            bare_cpu, bare_wall = clock.lap(runs)
        finally:
            bare_client.destroy()
    in_process_wall = await _in_process_ms(runs)
    return {
        "operations_per_run": operations,
        "durable_cpu_ms_per_run": durable_cpu,
        "bare_cpu_ms_per_run": bare_cpu,
        "durable_cpu_ms_per_op": durable_cpu / operations,
        "bare_cpu_ms_per_op": bare_cpu / operations,
        "pi_core_share": (durable_cpu - bare_cpu) / durable_cpu,
        "durable_wall_ms_per_run": durable_wall,
        "bare_wall_ms_per_run": bare_wall,
        "in_process_wall_ms_per_run": in_process_wall,
    }


async def _durable_run(client: DurableRuns) -> str:
    run_id = await client.start(AGENT, PROMPT)
    await client.result(run_id)
    return run_id


async def _bare_run(client: DBOSClient, operations: int) -> None:
    options: EnqueueOptions = {"queue_name": BARE_QUEUE, "workflow_name": BARE_WORKFLOW}
    handle: WorkflowHandleAsync[int] = await client.enqueue_async(options, operations)
    await handle.get_result()


async def _in_process_ms(runs: int) -> float:
    """Wall ms of the same run without durability (many more of them: each is short)."""
    count = runs * 20
    await in_process_run(PROMPT)
    clock = Clock()
    for _ in range(count):
        await in_process_run(PROMPT)
    return clock.lap(count)[1]


async def throughput(database_url: str, workers: int, runs: int) -> dict[str, Any]:
    """Runs per second with ``workers`` worker processes serving ``runs`` runs started at once."""
    processes = [_start_worker(database_url, f"bench-{index}") for index in range(workers)]
    try:
        client = DurableRuns(database_url)
        await client.result(await client.start(AGENT, PROMPT))  # every worker is up: warm-up
        clock = Clock()
        run_ids = [await client.start(AGENT, PROMPT) for _ in range(runs)]
        async with anyio.create_task_group() as group:
            for run_id in run_ids:
                group.start_soon(client.result, run_id)
        seconds = time.perf_counter() - clock.wall
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
    return {"workers": workers, "runs": runs, "runs_per_second": runs / seconds}


def _start_worker(database_url: str, executor_id: str) -> subprocess.Popen[str]:
    """``pi-core worker`` serving the benchmark's agent; returns once it serves."""
    command = [sys.executable, "-m", "pi_core", "worker", "bench.durable.agents:agents"]
    command += ["--db", database_url, "--executor-id", executor_id]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=os.environ
    )
    assert process.stderr is not None
    for line in process.stderr:
        if READY in line:
            break
    else:
        raise RuntimeError(f"the worker {executor_id} exited before serving")
    _drain(process)
    return process


def _drain(process: subprocess.Popen[str]) -> None:
    """Keep reading the worker's stderr so that its logging never blocks on a full pipe."""
    import threading

    stream = process.stderr
    assert stream is not None
    threading.Thread(target=stream.read, daemon=True).start()
