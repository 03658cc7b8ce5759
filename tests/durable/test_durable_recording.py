"""What a durable run does with what it cannot record: a result that is not JSON data, a result
over the cap, and a database that fails to store a step (a real full disk: a small tmpfs).

An engine's failure is never a tool's result: the run fails with a clear error instead.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from dbos import DBOSClient

from durable.durable_agents import lines
from durable.workers import WorkerProcess, wait_for_line
from pi_core import TextContent, ToolResultMessage
from pi_core.durable import DurableRuns, RunFailedError

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A directory on a 6 MiB file system of its own (a tmpfs: mounting one needs root)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount_point)]
    mounted = subprocess.run(command, capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"a small disk is a tmpfs mount, which failed: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` until only ``leave`` bytes are free."""
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    with open(disk / "filler", "wb") as filler:
        filler.write(b"\0" * max(free - leave, 0))


async def produced(database_url: str, params: dict[str, object]) -> list[ToolResultMessage]:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("producer", "go", params=params)
            new = await runs.result(run_id)
    return [message for message in new if isinstance(message, ToolResultMessage)]


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("recording")
    url = f"sqlite:///{directory / 'runs.sqlite'}"
    worker = WorkerProcess(url, "recording-tests", directory / "worker.log").start()
    try:
        yield url
    finally:
        worker.stop()


async def test_a_result_that_is_not_json_data_is_refused_with_a_clear_error_result(
    database_url: str, tmp_path: Path
) -> None:
    [result] = await produced(database_url, {"dir": str(tmp_path), "kind": "lock"})
    assert result.is_error
    [text] = result.content
    assert isinstance(text, TextContent)
    assert text.text.startswith("Tool produce returned a result that cannot be recorded")
    assert "not JSON data" in text.text


async def test_a_result_over_the_cap_is_an_error_result_saying_so(
    database_url: str, tmp_path: Path
) -> None:
    size = 3 * MIB  # over the default cap of 2 MiB
    [result] = await produced(database_url, {"dir": str(tmp_path), "kind": "text", "size": size})
    assert result.is_error
    assert result.content == [
        TextContent(
            f"Tool produce returned {size + 2} bytes of result, more than the {2 * MIB} a "
            "durable run records (open_worker's max_result_bytes)"
        )
    ]


async def test_a_step_the_database_cannot_store_fails_the_run_and_is_never_its_result(
    small_disk: Path, tmp_path: Path
) -> None:
    database_url = f"sqlite:///{small_disk / 'runs.sqlite'}"
    worker = WorkerProcess(database_url, "full-disk", tmp_path / "worker.log").start()
    try:
        params = {"dir": str(tmp_path), "kind": "text", "size": MIB, "wait": True}
        async with DurableRuns(database_url) as runs:
            with anyio.fail_after(30):
                run_id = await runs.start("producer", "go", params=params)
                await wait_for_line(tmp_path, "tool_runs", "call_1")
                # Room for the small writes of a run, not for the tool's 1 MiB result.
                fill(small_disk, leave=256 * 1024)
                (tmp_path / "release").touch()
                with pytest.raises(RunFailedError) as failed:
                    await runs.result(run_id)
                status = await runs.status(run_id)
                events = [event async for _, event in runs.events(run_id)]
    finally:
        worker.stop()
    message = str(failed.value)
    assert "the outcome of tool produce (call call_1) could not be recorded" in message
    assert "database or disk is full" in message
    assert "[SQL:" not in message and "[parameters:" not in message
    assert status.state == "error"
    assert not [event for event in events if event.type == "tool_execution_end"]
    assert lines(tmp_path, "tool_runs") == ["call_1"]


def copies(value: object, text: str) -> int:
    """How many times ``text`` is a string of the JSON-like ``value``."""
    if isinstance(value, str):
        return int(value == text)
    if isinstance(value, dict):
        return sum(copies(item, text) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(copies(item, text) for item in value)
    return 0


async def test_the_event_stream_holds_a_result_once(database_url: str, tmp_path: Path) -> None:
    size = 10_000
    [result] = await produced(database_url, {"dir": str(tmp_path), "kind": "text", "size": size})
    assert result.content == [TextContent("x" * size)]
    client = await anyio.to_thread.run_sync(
        functools.partial(DBOSClient, system_database_url=database_url)
    )
    try:
        [run] = await anyio.to_thread.run_sync(
            functools.partial(
                client.list_workflows, name="pi_core.durable.run", limit=1, sort_desc=True
            )
        )
        entries = await anyio.to_thread.run_sync(
            lambda: list(client.read_stream(run.workflow_id, "events"))
        )
    finally:
        await anyio.to_thread.run_sync(client.destroy)
    # An entry is stored as one pickle, which holds an object its events share once: the result
    # is stored once if one entry holds it (not also agent_end's, at the end).
    assert len([entry for entry in entries if copies(entry, "x" * size)]) == 1
