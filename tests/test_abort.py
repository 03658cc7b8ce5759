"""Abort as a cancel scope: the running phase stops at once, then the close-out."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from pi_core import (
    AbortController,
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    BeforeToolCallContext,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import ScriptedStream, check_event_grammar, check_transcript, scripted_reply
from support import BlockingStream, Recorder, faux, logging_getter, make_tool

pytestmark = pytest.mark.anyio


def text_of(message: ToolResultMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def tool_reply(provider: FauxProvider, *names: str) -> None:
    calls = [faux_tool_call(name, {}, id=f"c{i}") for i, name in enumerate(names)]
    provider.set_responses(
        [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("never")]
    )


async def test_abort_while_streaming_keeps_the_partial() -> None:
    stream = BlockingStream()
    controller = AbortController()
    recorder = Recorder()

    def emit(event: Any) -> None:
        recorder(event)
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            controller.abort()

    config = AgentLoopConfig(Model("m", api="a", provider="p"), stream_fn=stream)
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")], AgentContext(), config, emit, signal=controller.signal
        )
    check_event_grammar(recorder.events)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == "aborted"
    assert final.error_message == "Request was aborted"
    assert final.content == [TextContent("Hel")]
    assert recorder.types[-4:] == ["message_update", "message_end", "turn_end", "agent_end"]
    assert recorder.of_type("turn_end")[0].tool_results == []
    assert stream.closed
    assert stream.calls == 1


async def test_abort_from_another_task_cancels_the_stream_at_once() -> None:
    stream = BlockingStream()
    controller = AbortController()
    config = AgentLoopConfig(Model("m"), stream_fn=stream)
    recorder = Recorder()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def abort_when_streaming() -> None:
                await stream.started.wait()
                controller.abort("user pressed stop")

            tg.start_soon(abort_when_streaming)
            new = await run_agent_loop(
                [UserMessage("go")], AgentContext(), config, recorder, signal=controller.signal
            )
    assert new[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert controller.signal.reason == "user pressed stop"
    check_event_grammar(recorder.events)


async def test_listener_running_during_abort_is_not_cancelled() -> None:
    stream = BlockingStream()
    controller = AbortController()
    finished: list[str] = []

    async def emit(event: Any) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            controller.abort()
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
            finished.append("listener survived")

    config = AgentLoopConfig(Model("m"), stream_fn=stream)
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")], AgentContext(), config, emit, signal=controller.signal
        )
    assert finished == ["listener survived"]
    assert new[-1].stop_reason == "aborted"  # type: ignore[union-attr]


async def test_already_aborted_signal_never_calls_the_model() -> None:
    stream = BlockingStream()
    controller = AbortController()
    controller.abort()
    polls: list[str] = []
    config = AgentLoopConfig(
        Model("m", api="a", provider="p"),
        stream_fn=stream,
        get_steering_messages=logging_getter(polls, "S"),
        get_follow_up_messages=logging_getter(polls, "F"),
    )
    recorder = Recorder()
    new = await run_agent_loop(
        [UserMessage("go")], AgentContext(), config, recorder, signal=controller.signal
    )
    assert stream.calls == 0
    assert polls == []
    assert recorder.types == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.content, final.stop_reason, final.error_message) == (
        [],
        "aborted",
        "Request was aborted",
    )
    assert (final.api, final.provider, final.model) == ("a", "p", "m")


async def test_abort_during_parallel_batch_closes_out_every_call() -> None:
    provider = faux()
    tool_reply(provider, "quick", "stuck", "stuck")
    controller = AbortController()
    stuck_started = [anyio.Event(), anyio.Event()]
    cleaned_up: list[str] = []
    signals: list[AbortSignal] = []

    async def stuck(call_id: str, _params: Any, signal: AbortSignal, _u: Any) -> str:
        signals.append(signal)
        stuck_started[int(call_id[1:]) - 1].set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned_up.append(call_id)
        return "never"  # pragma: no cover

    async def aborter() -> None:
        for event in stuck_started:
            await event.wait()
        controller.abort()

    recorder = Recorder()
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    context = AgentContext(tools=[make_tool("quick"), make_tool("stuck", stuck)])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(aborter)
            new = await run_agent_loop(
                [UserMessage("go")], context, config, recorder, signal=controller.signal
            )
    check_event_grammar(recorder.events)
    check_transcript(new)
    assert sorted(cleaned_up) == ["c1", "c2"]  # no task is left running
    assert all(signal.aborted for signal in signals)
    by_id = {m.tool_call_id: m for m in new if isinstance(m, ToolResultMessage)}
    assert text_of(by_id["c0"]) == "quick done"
    assert text_of(by_id["c1"]) == text_of(by_id["c2"]) == "Operation aborted"
    assert by_id["c1"].is_error
    assert provider.call_count == 1  # no further LLM call
    assert recorder.types[-2:] == ["turn_end", "agent_end"]
    assert new[-1].role == "toolResult"


async def test_abort_in_sequential_batch_closes_out_the_calls_not_started() -> None:
    provider = faux()
    tool_reply(provider, "stuck", "quick", "quick")
    controller = AbortController()
    ran: list[str] = []

    async def stuck(*_: Any) -> str:
        controller.abort()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    async def quick(call_id: str, *_: Any) -> str:
        ran.append(call_id)
        return "quick"

    recorder = Recorder()
    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        tool_execution="sequential",
    )
    context = AgentContext(tools=[make_tool("quick", quick), make_tool("stuck", stuck)])
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")], context, config, recorder, signal=controller.signal
        )
    check_event_grammar(recorder.events)
    assert ran == []
    results = [m for m in new if isinstance(m, ToolResultMessage)]
    assert [text_of(m) for m in results] == ["Operation aborted"] * 3
    assert [e.tool_call_id for e in recorder.of_type("tool_execution_start")] == ["c0", "c1", "c2"]
    assert provider.call_count == 1


async def test_abort_during_an_async_before_hook_cancels_it() -> None:
    provider = faux()
    tool_reply(provider, "t", "t")
    controller = AbortController()
    executed: list[str] = []

    async def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> None:
        controller.abort()
        await anyio.sleep_forever()

    async def execute(call_id: str, *_: Any) -> str:
        executed.append(call_id)
        return "ran"

    recorder = Recorder()
    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        before_tool_call=before,
    )
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")],
            AgentContext(tools=[make_tool("t", execute)]),
            config,
            recorder,
            signal=controller.signal,
        )
    check_event_grammar(recorder.events)
    assert executed == []
    assert [text_of(m) for m in new if isinstance(m, ToolResultMessage)] == [
        "Operation aborted",
        "Operation aborted",
    ]


async def test_no_polls_after_abort_and_queues_keep_their_messages() -> None:
    provider = faux()
    tool_reply(provider, "t")
    controller = AbortController()
    follow_ups = [UserMessage("later")]
    polls: list[str] = []

    async def aborting(*_: Any) -> str:
        controller.abort()
        return "done anyway"

    def get_steering() -> list[Any]:
        polls.append("S")
        return []

    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        get_steering_messages=get_steering,
        get_follow_up_messages=logging_getter(polls, "F", *follow_ups),
    )
    new = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(tools=[make_tool("t", aborting)]),
        config,
        Recorder(),
        signal=controller.signal,
    )
    assert polls == ["S"]  # only the poll at the start of the run: the follow-up stays queued
    assert new[-1].role == "toolResult"


async def test_messages_drained_before_an_abort_are_injected() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("first"), faux_assistant_message("never")])
    controller = AbortController()
    steer = UserMessage("steer")
    queue = [steer]
    recorder = Recorder()

    def emit(event: Any) -> None:
        recorder(event)
        if event.type == "message_end" and event.message is steer:
            controller.abort()

    def drain() -> list[Any]:
        drained, queue[:] = list(queue), []
        return drained

    calls_before = provider.call_count
    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        get_steering_messages=lambda: [] if not recorder.of_type("turn_end") else drain(),
    )
    new = await run_agent_loop(
        [UserMessage("go")], AgentContext(), config, emit, signal=controller.signal
    )
    check_event_grammar(recorder.events)
    assert steer in new
    assert provider.call_count - calls_before == 1
    assert new[-1].stop_reason == "aborted"  # type: ignore[union-attr]


async def test_abort_after_the_final_reply_changes_nothing() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("final")])
    controller = AbortController()
    recorder = Recorder()

    def emit(event: Any) -> None:
        recorder(event)
        if event.type == "message_end" and event.message.role == "assistant":
            controller.abort()

    new = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(provider.get_model(), stream_fn=provider.stream),
        emit,
        signal=controller.signal,
    )
    check_event_grammar(recorder.events)
    assert new[-1].stop_reason == "stop"  # type: ignore[union-attr]
    assert new[-1].content == [TextContent("final")]  # type: ignore[union-attr]


async def test_outside_cancellation_is_not_an_abort() -> None:
    provider = faux()
    tool_reply(provider, "stuck")
    started = anyio.Event()
    cleaned = anyio.Event()

    async def stuck(*_: Any) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()
        return "never"  # pragma: no cover

    recorder = Recorder()
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                await run_agent_loop(
                    [UserMessage("go")],
                    AgentContext(tools=[make_tool("stuck", stuck)]),
                    config,
                    recorder,
                    signal=AbortController().signal,
                )

            tg.start_soon(run)
            await started.wait()
            tg.cancel_scope.cancel()
    assert cleaned.is_set()
    assert "agent_end" not in recorder.types


@pytest.mark.parametrize("kind", ["message_start", "message_update"])
async def test_abort_from_a_listener_stops_a_stream_that_never_checkpoints(kind: str) -> None:
    # A provider may hand over a burst of buffered events without yielding to the event loop;
    # an abort from a listener must still cut the reply short there.
    stream = ScriptedStream([scripted_reply("Hello there, how are you?")], checkpoints=False)
    controller = AbortController()
    recorder = Recorder()

    def emit(event: Any) -> None:
        recorder(event)
        if event.type == kind and event.message.role == "assistant":
            controller.abort()

    config = AgentLoopConfig(stream.model, stream_fn=stream)
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")], AgentContext(), config, emit, signal=controller.signal
        )
    check_event_grammar(recorder.events)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.stop_reason, final.error_message) == ("aborted", "Request was aborted")
    assert recorder.types[-3:] == ["message_end", "turn_end", "agent_end"]
    assert recorder.types.count("message_update") <= 1
    assert stream.open_streams == 0


async def test_abort_from_the_model_call_itself_ends_a_stream_that_never_checkpoints() -> None:
    # The abort lands while no event is being emitted and the stream then runs to its end
    # without a checkpoint: the reply still ends as aborted and nothing runs after it.
    controller = AbortController()
    stream = ScriptedStream(
        [scripted_reply("Hello there", ToolCall("c0", "noop", {}))], checkpoints=False
    )
    recorder = Recorder()

    def abort_then_convert(messages: list[Any]) -> list[Any]:
        controller.abort()
        return messages

    config = AgentLoopConfig(stream.model, stream_fn=stream, convert_to_llm=abort_then_convert)
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")],
            AgentContext(tools=[make_tool("noop")]),
            config,
            recorder,
            signal=controller.signal,
        )
    check_event_grammar(recorder.events)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.stop_reason, final.error_message) == ("aborted", "Request was aborted")
    assert "tool_execution_start" not in recorder.types
    assert recorder.types[-3:] == ["message_end", "turn_end", "agent_end"]


async def test_calls_waiting_for_the_limiter_never_start_after_an_abort() -> None:
    provider = faux()
    tool_reply(provider, "t", "t", "t")
    controller = AbortController()
    entered: list[str] = []

    async def first_aborts(call_id: str, *_: Any) -> str:
        entered.append(call_id)
        controller.abort()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream, max_parallel_tools=1)
    recorder = Recorder()
    with anyio.fail_after(5):
        new = await run_agent_loop(
            [UserMessage("go")],
            AgentContext(tools=[make_tool("t", first_aborts)]),
            config,
            recorder,
            signal=controller.signal,
        )
    check_event_grammar(recorder.events)
    assert len(entered) == 1
    assert [text_of(m) for m in new if isinstance(m, ToolResultMessage)] == [
        "Operation aborted"
    ] * 3
