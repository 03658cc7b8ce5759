"""The invariant an abort of the model call relies on: the run's task group holds no other task
while the model streams. Debug runs check it; these tests break it on purpose."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import pi_core._loop as loop_module
import pi_core._run_group as run_group
from pi_core import (
    AbortController,
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    AssistantMessageEvent,
    Model,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers.faux import faux_assistant_message
from pi_core.testing import check_event_grammar
from support import BlockingStream, Recorder, calls_then_text, faux, make_tool

pytestmark = pytest.mark.anyio

MODEL = Model("m", api="a", provider="p")


def test_the_test_suite_runs_with_the_checks() -> None:
    # Every run of the suite (tool batches, steering, aborts mid-stream) is then a check.
    assert run_group.DEBUG


async def test_a_run_with_a_tool_batch_keeps_the_invariant() -> None:
    provider = calls_then_text("t", "u")
    recorder = Recorder()
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream, max_parallel_tools=2)
    tools = [make_tool("t"), make_tool("u")]
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")],
            AgentContext(tools=tools),
            config,
            recorder,
            signal=AbortController().signal,
        )
    check_event_grammar(recorder.events)
    assert [message.role for message in new] == [
        "system",  # the tools' declaration
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]


async def test_an_abort_mid_stream_keeps_the_invariant() -> None:
    stream = BlockingStream()
    controller = AbortController()

    async def abort_when_streaming() -> None:
        await stream.started.wait()
        controller.abort()

    config = AgentLoopConfig(MODEL, stream_fn=stream)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as host:
            host.start_soon(abort_when_streaming)
            new = await run_agent_loop(
                [UserMessage("go")], AgentContext(), config, Recorder(), signal=controller.signal
            )
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == "aborted"


def text_reply() -> AgentLoopConfig:
    provider = faux()
    provider.set_responses([faux_assistant_message("hello")])
    return AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)


async def test_a_task_spawned_into_the_group_while_the_model_streams_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = loop_module.ReplyReader._consume

    async def consume_beside_a_task(
        self: Any, iterator: AsyncIterator[AssistantMessageEvent]
    ) -> AssistantMessage:
        self._run.task_group.start_soon(anyio.lowlevel.checkpoint)
        return await original(self, iterator)

    monkeypatch.setattr(loop_module.ReplyReader, "_consume", consume_beside_a_task)
    config = text_reply()
    with (
        anyio.fail_after(5),
        pytest.raises(AssertionError, match=r"1 task.* spawned into the run's task group"),
    ):
        await run_agent_loop(
            [UserMessage("go")], AgentContext(), config, Recorder(), signal=AbortController().signal
        )


async def test_a_task_alive_when_the_model_call_starts_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = loop_module._Run.run_turns

    async def run_turns_beside_a_task(self: Any) -> None:
        self.task_group.start_soon(anyio.sleep_forever, name="lingering")
        await original(self)

    monkeypatch.setattr(loop_module._Run, "run_turns", run_turns_beside_a_task)
    config = text_reply()
    with (
        anyio.fail_after(5),
        pytest.raises(AssertionError, match=r"no other task .* it has \['lingering'\]"),
    ):
        await run_agent_loop([UserMessage("go")], AgentContext(), config, Recorder())
