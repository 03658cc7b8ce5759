"""A worker killed with SIGKILL in the middle of a run, and restarted: the run completes.

The run's first reply asks for three tools in parallel: two fast ones and a slow one that waits
until the test releases it. The worker is killed once the fast calls' outcomes are recorded and
the slow one is running. Restarted with the same executor id, it recovers the run: the model is
not called again for the first reply, the fast tools do not run again, only the slow call does.
Every model call and tool execution appends a line to a file, so the test counts them across
processes. The client side runs on both backends; the workers are asyncio processes.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from durable.durable_agents import lifecycle, lines, run_in_process, without_timestamps
from durable.workers import WorkerProcess, wait_for_line, wait_until_steps_recorded
from pi_core.durable import DurableRuns

pytestmark = pytest.mark.anyio


async def test_a_killed_worker_restarted_with_its_executor_id_finishes_the_run(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    work = tmp_path / "work"
    work.mkdir()
    worker = WorkerProcess(url, "crashing-worker", tmp_path / "worker.log").start()
    try:
        async with DurableRuns(url) as runs:
            with anyio.fail_after(60):
                run_id = await runs.start("worker-test", "hello", params={"dir": str(work)})
                await wait_for_line(work, "tool_runs", "call-slow")
                await wait_until_steps_recorded(url, run_id, ["model", "tool fast", "tool fast"])
                worker.kill()
                assert lines(work, "model_calls") == ["2"]
                assert sorted(lines(work, "tool_runs")) == ["call-a", "call-b", "call-slow"]

                (work / "release").touch()
                worker = WorkerProcess(url, "crashing-worker", tmp_path / "worker.log").start()
                new = await runs.result(run_id)
                events = [event async for _, event in runs.events(run_id)]
                status = await runs.status(run_id)
    finally:
        worker.stop()

    assert status.state == "success"
    # The first reply and the fast calls ran once; the slow call, in flight, ran again.
    assert lines(work, "model_calls") == ["2", "6"]
    assert sorted(lines(work, "tool_runs")) == ["call-a", "call-b", "call-slow", "call-slow"]

    reference_dir = tmp_path / "reference"
    reference_dir.mkdir()
    (reference_dir / "release").touch()
    reference = await run_in_process("worker-test", {"dir": str(reference_dir)}, "hello")
    transcript = [event.message for event in reference if event.type == "message_end"]
    assert [without_timestamps(message) for message in new] == [
        without_timestamps(message) for message in transcript
    ]
    # Every lifecycle event exactly once, and message_end events are the transcript, field for
    # field: timestamps included, since the run recorded its clock.
    assert lifecycle(events) == lifecycle(reference)
    assert [event.message for event in events if event.type == "message_end"] == new
