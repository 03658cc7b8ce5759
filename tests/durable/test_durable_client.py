"""Durable runs driven by the client, against one real worker process on a SQLite database.

The client runs on asyncio and on trio (it calls DBOS through worker threads); the worker is a
separate asyncio process, since DBOS workflows run on asyncio only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from durable.durable_agents import lifecycle, lines, run_in_process, without_timestamps
from durable.workers import WorkerProcess, wait_for_line, wait_until_steps_recorded
from pi_core import (
    AssistantMessage,
    SystemMessage,
    TextContent,
    ToolExecutionEnd,
    ToolResultMessage,
    UserMessage,
)
from pi_core.durable import (
    DurableError,
    DurableRuns,
    RunFailedError,
    UnknownAgentError,
    UnknownRunError,
)

pytestmark = pytest.mark.anyio

READER = Path(__file__).resolve().parent / "read_events.py"


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SQLite database served by one worker process for the whole module."""
    directory = tmp_path_factory.mktemp("durable-client")
    url = f"sqlite:///{directory / 'runs.sqlite'}"
    worker = WorkerProcess(url, "client-tests", directory / "worker.log").start()
    try:
        yield url
    finally:
        worker.stop()


def released(tmp_path: Path) -> dict[str, str]:
    """Run parameters whose slow tool returns at once."""
    (tmp_path / "release").touch()
    return {"dir": str(tmp_path)}


async def test_a_run_streams_its_events_and_returns_its_messages(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("worker-test", "hello", params=released(tmp_path))
            events = [event async for _, event in runs.events(run_id)]
            new = await runs.result(run_id)
            status = await runs.status(run_id)
    reference_dir = tmp_path / "reference"
    reference_dir.mkdir()
    reference = await run_in_process("worker-test", released(reference_dir), "hello")
    assert lifecycle(events) == lifecycle(reference)
    assert [without_timestamps(e.message) for e in events if e.type == "message_end"] == [
        without_timestamps(e.message) for e in reference if e.type == "message_end"
    ]
    assert [type(message) for message in new] == [
        SystemMessage,  # the spec's prompt and tools, recorded with the run
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        ToolResultMessage,
        ToolResultMessage,
        AssistantMessage,
    ]
    assert [event.message for event in events if event.type == "message_end"] == new
    # The durations are recorded: every reply and every call that ran has one, and the event
    # stream (written as the run went) says the same as the result (read back at its end).
    timed = [m for m in new if isinstance(m, (AssistantMessage, ToolResultMessage))]
    assert len(timed) == len(new) - 2  # all but the system message and the prompt
    assert all(m.duration_ms is not None for m in timed)
    ends = [event for event in events if isinstance(event, ToolExecutionEnd)]
    results = {m.tool_call_id: m.duration_ms for m in new if isinstance(m, ToolResultMessage)}
    assert {end.tool_call_id: end.duration_ms for end in ends} == results
    assert (status.run_id, status.agent, status.state, status.executor_id) == (
        run_id,
        "worker-test",
        "success",
        "client-tests",
    )


async def test_a_malformed_stream_fails_the_reply_as_it_does_in_process(
    database_url: str,
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("malformed", "hello")
            events = [event async for _, event in runs.events(run_id)]
    reference = await run_in_process("malformed", {}, "hello")
    replies = [without_timestamps(e.message) for e in events if e.type == "message_end"]
    assert lifecycle(events) == lifecycle(reference)
    assert replies == [without_timestamps(e.message) for e in reference if e.type == "message_end"]
    assert replies[-1].stop_reason == "error"
    assert replies[-1].error_message == "Malformed stream: a second start event"


async def test_a_second_start_with_the_same_run_id_returns_the_first_run(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            first = await runs.start(
                "worker-test", "first", params=released(tmp_path), run_id=f"same-{tmp_path.name}"
            )
            second = await runs.start(
                "worker-test", "second", params=released(tmp_path), run_id=first
            )
            new = await runs.result(first)
    assert second == first
    assert isinstance(new[1], UserMessage)
    assert new[1].content == [TextContent("first")]
    assert (tmp_path / "model_calls").read_text().count("\n") == 2  # one run, two model calls


async def test_events_resume_after_an_offset_and_can_be_read_after_the_run(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("worker-test", "hello", params=released(tmp_path))
            await runs.result(run_id)
            everything = [item async for item in runs.events(run_id)]
            offset = everything[6][0]
            rest = [item async for item in runs.events(run_id, after=offset)]
    offsets = [offset for offset, _ in everything]
    assert offsets == sorted(set(offsets))
    assert rest == everything[7:]


async def test_an_unknown_agent_is_refused_at_start_and_nothing_is_queued(
    database_url: str,
) -> None:
    async with DurableRuns(database_url) as runs:
        before = await runs.list_runs()
        with pytest.raises(UnknownAgentError, match="'nobody'"):
            await runs.start("nobody", "hello")
        assert await runs.list_runs() == before


async def test_an_unknown_run_id_is_named_by_every_call(database_url: str) -> None:
    async with DurableRuns(database_url) as runs:
        for call in (
            runs.status("no-such-run"),
            runs.result("no-such-run"),
            runs.steer("no-such-run", "hi"),
            runs.abort("no-such-run"),
            runs.cancel("no-such-run"),
        ):
            with pytest.raises(UnknownRunError, match="no-such-run"):
                await call
        with pytest.raises(UnknownRunError, match="no-such-run"):
            [_ async for _ in runs.events("no-such-run")]


async def test_a_factory_that_raises_ends_the_run_in_error_naming_the_agent(
    database_url: str,
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("broken", "hello")
            with pytest.raises(RunFailedError, match=r"'broken'.*no model configured"):
                await runs.result(run_id)
            events = [event async for _, event in runs.events(run_id)]
            status = await runs.status(run_id)
    assert status.state == "error"
    assert events == []


async def test_a_database_that_cannot_be_reached_is_named(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing' / 'dir' / 'runs.sqlite'}"
    async with DurableRuns(url) as runs:
        with pytest.raises(DurableError, match="missing/dir"):
            await runs.start("worker-test", "hello")
    postgres = "postgresql://user:secret@127.0.0.1:1/none"
    async with DurableRuns(postgres, unreachable_after=0.5) as runs:
        with pytest.raises(DurableError, match=r"unreachable: .*127\.0\.0\.1:1") as raised:
            await runs.status("any")
    assert "secret" not in str(raised.value)


async def test_steering_and_a_follow_up_sent_mid_run_are_injected_at_the_poll_points(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("worker-test", "hello", params={"dir": str(tmp_path)})
            await wait_for_line(tmp_path, "tool_runs", "call-slow")
            await runs.steer(run_id, "change course")
            await runs.follow_up(run_id, UserMessage([TextContent("one more thing")]))
            (tmp_path / "release").touch()
            new = await runs.result(run_id)
    roles = [message.role for message in new]
    assert roles == ["system", "user", "assistant"] + ["toolResult"] * 3 + ["user", "assistant"] * 2
    assert new[6].content == [TextContent("change course")]  # type: ignore[union-attr]
    assert new[8].content == [TextContent("one more thing")]  # type: ignore[union-attr]
    assert new[-1].content == [TextContent("done after 3 results and 3 user messages")]  # type: ignore[union-attr]


async def test_a_soft_abort_closes_out_as_an_in_process_abort_does(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("worker-test", "hello", params={"dir": str(tmp_path)})
            await wait_for_line(tmp_path, "tool_runs", "call-slow")
            await wait_until_steps_recorded(database_url, run_id, ["tool fast", "tool fast"])
            await runs.abort(run_id)
            new = await runs.result(run_id)
            events = [event async for _, event in runs.events(run_id)]
            status = await runs.status(run_id)
            await runs.abort(run_id)  # a finished run: nothing happens
            assert (await runs.status(run_id)).state == "success"
    assert status.state == "success"
    results = [message for message in new if isinstance(message, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error, r.content) for r in results] == [
        ("call-a", False, [TextContent("call-a ok")]),
        ("call-slow", True, [TextContent("Operation aborted")]),
        ("call-b", False, [TextContent("call-b ok")]),
    ]
    assert [message.role for message in new] == ["system", "user", "assistant"] + ["toolResult"] * 3
    assert lifecycle(events)[-2:] == ["turn_end", "agent_end"]
    assert lines(tmp_path, "model_calls") == ["2"]  # no model call after the abort


async def test_a_cancelled_run_stops_and_resume_finishes_it(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("worker-test", "hello", params={"dir": str(tmp_path)})
            await wait_for_line(tmp_path, "tool_runs", "call-slow")
            await wait_until_steps_recorded(database_url, run_id, ["tool fast", "tool fast"])
            await runs.cancel(run_id)
            assert (await runs.status(run_id)).state == "cancelled"
            with pytest.raises(RunFailedError, match="cancelled"):
                await runs.result(run_id)
            (tmp_path / "release").touch()
            await runs.resume(run_id)
            new = await runs.result(run_id)
            assert (await runs.status(run_id)).state == "success"
    assert [message.role for message in new][-2:] == ["toolResult", "assistant"]
    assert lines(tmp_path, "model_calls") == ["2", "6"]
    assert lines(tmp_path, "tool_runs").count("call-a") == 1


async def test_another_process_reads_the_events_live_and_they_are_the_recorded_ones(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("worker-test", "hello", params={"dir": str(tmp_path)})
            async with await anyio.open_process(
                [sys.executable, str(READER), database_url, run_id]
            ) as reader:
                assert reader.stdout is not None
                seen: list[str] = []
                text = TextReceiveStream(reader.stdout)
                pending = ""
                async for chunk in text:
                    *complete, pending = (pending + chunk).split("\n")
                    seen.extend(complete)
                    if any(line.endswith("tool_execution_update") for line in seen):
                        break  # the reader saw the slow call running: the run is still going
                (tmp_path / "release").touch()
                async for chunk in text:
                    *complete, pending = (pending + chunk).split("\n")
                    seen.extend(complete)
                await reader.wait()
            recorded = [f"{offset} {event.type}" async for offset, event in runs.events(run_id)]
    assert seen == recorded
    assert seen[-1].endswith("agent_end")


async def test_a_soft_abort_while_the_model_streams_ends_the_reply_as_aborted(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            run_id = await runs.start("slow-model", "hello", params={"dir": str(tmp_path)})
            await wait_for_line(tmp_path, "model_streaming", "waiting")
            await runs.abort(run_id)
            new = await runs.result(run_id)
            events = [event async for _, event in runs.events(run_id)]
    reply = new[-1]
    assert isinstance(reply, AssistantMessage)
    assert (reply.stop_reason, reply.error_message) == ("aborted", "Request was aborted")
    assert reply.content == [TextContent("Thinking about it")]  # the partial, before text_end
    assert lifecycle(events)[-3:] == ["message_end", "turn_end", "agent_end"]
    assert [event.message for event in events if event.type == "message_end"] == new


async def test_a_run_continues_from_an_earlier_transcript(
    database_url: str, tmp_path: Path
) -> None:
    async with DurableRuns(database_url) as runs:
        with anyio.fail_after(30):
            first = await runs.start("worker-test", "hello", params=released(tmp_path))
            earlier = await runs.result(first)
            second = await runs.start(
                "worker-test", "and now?", params=released(tmp_path), messages=earlier
            )
            new = await runs.result(second)
    assert [message.role for message in new] == ["user", "assistant"]
    assert new[-1].content == [TextContent("done after 3 results and 2 user messages")]  # type: ignore[union-attr]
