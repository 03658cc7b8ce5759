"""The measurements of ``python -m bench.durable``, each run in a process of its own.

* :func:`cpu_per_operation`: in one process (a worker and a client), the CPU time of durable runs
  started and awaited one after another, against bare DBOS workflows that make the same database
  writes (as many steps, stream writes inside and outside steps, receives and sleeps, with tiny
  payloads), enqueued and awaited the same way; and the wall time of each against the same run in-process, without
  durability.
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
import attrs
from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowHandleAsync

from pi_core.durable import DurableRuns, open_worker
from pi_core.durable._dbos_names import EVENTS

from .agents import AGENT, agents, in_process_run

BARE_QUEUE = "bench-bare-steps"
BARE_WORKFLOW = "bench-bare-steps"
PROMPT = "go"
READY = "serving bench.durable.agents:agents"

QUEUE_POLLING_SECONDS = 0.1
RESULT_POLLING_SECONDS = 0.1
"""As often as a pi_core worker polls its queue and a client a run's end: both wait alike."""
IDLE_SECONDS_PER_RUN = 0.1
MAX_IDLE_SECONDS = 2.0


@DBOS.step()
async def _step(index: int, writes: int) -> int:
    """A model or tool step; ``writes`` stream entries from inside it, as a model step writes its
    ``message_update`` events."""
    for _ in range(writes):
        await DBOS.write_stream_async(EVENTS, index)
    return index


@DBOS.workflow(name=BARE_WORKFLOW)
async def bare_operations(kinds: list[str], in_step_writes: list[int]) -> int:
    """The recorded operations of a durable run, by kind, with nothing of pi_core around them."""
    steps = iter(in_step_writes)
    for index, kind in enumerate(kinds):
        if kind == "DBOS.recv":  # records a sleep for its timeout too
            await DBOS.recv_async("bench", timeout_seconds=0)
        elif kind == "DBOS.sleep":
            await DBOS.sleep_async(0.001)  # a sleep of 0 is not recorded
        elif kind == "DBOS.writeStream":
            await DBOS.write_stream_async(EVENTS, index)
        elif kind == "DBOS.closeStream":
            await DBOS.close_stream_async(EVENTS)
        else:  # a model or tool step
            await _step(index, next(steps))
    return len(kinds)


@attrs.frozen
class Shape:
    """What a durable run records: its operations, and the stream entries its steps write."""

    names: list[str]
    stream_entries: int

    @property
    def kinds(self) -> list[str]:
        """The operations for :func:`bare_operations`, as many of each kind as ``names``."""
        kinds = list(self.names)
        for _ in range(self.names.count("DBOS.recv")):
            kinds.remove("DBOS.sleep")  # each recv brings its own
        return kinds

    @property
    def in_step_writes(self) -> list[int]:
        """Per model or tool step, the stream entries written from inside it (by model steps)."""
        inside = self.stream_entries - self.names.count("DBOS.writeStream")
        steps = [name for name in self.names if not name.startswith("DBOS.")]
        models = max(1, steps.count("model"))
        share = [inside // models + (index < inside % models) for index in range(models)]
        shares = iter(share)
        return [next(shares) if name == "model" else 0 for name in steps]

    @property
    def writes(self) -> int:
        """Database writes of a run: its recorded operations and the in-step stream entries."""
        return len(self.names) + sum(self.in_step_writes)

    @classmethod
    async def of(cls, run_id: str) -> Shape:
        steps = await DBOS.list_workflow_steps_async(run_id)
        entries = [entry async for entry in DBOS.read_stream_async(run_id, EVENTS)]
        return cls([step["function_name"] for step in steps], len(entries))


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
    """Durable runs against bare DBOS workflows of the same operations, one after another.

    CPU is the whole process's (the worker's threads and the client's); ``busy`` figures take
    out what the launched engine burns while idle (its pollers), at the rate measured first.
    """
    async with open_worker(agents, database_url, executor_id="bench-cpu"):
        await DBOS.register_queue_async(
            BARE_QUEUE, worker_concurrency=25, polling_interval_sec=QUEUE_POLLING_SECONDS
        )
        async with DurableRuns(database_url) as client:
            bare_client = DBOSClient(system_database_url=database_url)
            try:
                return await _compare(client, bare_client, runs)
            finally:
                bare_client.destroy()


async def _compare(client: DurableRuns, bare_client: DBOSClient, runs: int) -> dict[str, Any]:
    shape = await Shape.of(await _durable_run(client))  # warm-up; and what a run records
    bare_shape = await Shape.of(await _bare_run(bare_client, shape))
    assert (len(bare_shape.names), bare_shape.stream_entries) == (
        len(shape.names),
        shape.stream_entries,
    ), (shape, bare_shape)
    idle_seconds = min(MAX_IDLE_SECONDS, runs * IDLE_SECONDS_PER_RUN)
    idle = Clock()
    await anyio.sleep(idle_seconds)
    idle_cpu_per_ms = idle.lap(1)[0] / (idle_seconds * 1000)
    durable = Clock()
    for _ in range(runs):
        await _durable_run(client)
    durable_cpu, durable_wall = durable.lap(runs)
    bare = Clock()
    for _ in range(runs):
        await _bare_run(bare_client, shape)
    bare_cpu, bare_wall = bare.lap(runs)
    durable_busy = durable_cpu - idle_cpu_per_ms * durable_wall
    bare_busy = bare_cpu - idle_cpu_per_ms * bare_wall
    return {
        "operations_per_run": len(shape.names),
        "writes_per_run": shape.writes,
        "idle_cpu_ms_per_s": idle_cpu_per_ms * 1000,
        "durable_cpu_ms_per_run": durable_cpu,
        "bare_cpu_ms_per_run": bare_cpu,
        "durable_busy_cpu_ms_per_write": durable_busy / shape.writes,
        "bare_busy_cpu_ms_per_write": bare_busy / shape.writes,
        "pi_core_share": (durable_busy - bare_busy) / durable_busy,
        "durable_wall_ms_per_run": durable_wall,
        "bare_wall_ms_per_run": bare_wall,
        "in_process_wall_ms_per_run": await _in_process_ms(runs),
    }


async def _durable_run(client: DurableRuns) -> str:
    run_id = await client.start(AGENT, PROMPT)
    await client.result(run_id)
    return run_id


async def _bare_run(client: DBOSClient, shape: Shape) -> str:
    options: EnqueueOptions = {"queue_name": BARE_QUEUE, "workflow_name": BARE_WORKFLOW}
    handle: WorkflowHandleAsync[int] = await client.enqueue_async(
        options, shape.kinds, shape.in_step_writes
    )
    await handle.get_result(polling_interval_sec=RESULT_POLLING_SECONDS)
    return handle.get_workflow_id()


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
