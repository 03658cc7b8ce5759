"""What an execution engine plugs into: the clock, interruptions, and ``before_tool_batch``."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from pi_core import (
    AbortController,
    Agent,
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    AssistantMessageEvent,
    BeforeToolCallContext,
    BeforeToolCallResult,
    Context,
    Model,
    StreamOptions,
    StreamStart,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core._texts import NO_TERMINAL_EVENT
from pi_core.lowlevel import REQUEST_ABORTED, ReplyReader
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from support import BlockingStream, Recorder, faux, make_tool

pytestmark = pytest.mark.anyio


class EngineStop(Exception):
    """What an engine raises inside a run to stop it (a workflow cancelled elsewhere)."""


@pytest.fixture
def engine_stop() -> type[EngineStop]:
    """The engine's exception, which the tests name in ``interruptions``."""
    return EngineStop


def counting_clock(start: int = 5_000) -> Any:
    """A clock that reads ``start``, ``start + 1``, ... : every reading is told apart."""
    return itertools.count(start).__next__


def tool_then_text(provider: FauxProvider, *names: str) -> None:
    calls = [faux_tool_call(name, {}, id=f"call-{name}") for name in names]
    provider.set_responses(
        [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("done")]
    )


# --- the clock ----------------------------------------------------------------------------------


async def test_tool_results_are_stamped_by_the_configured_clock() -> None:
    provider = faux()
    tool_then_text(provider, "a", "b")
    config = AgentLoopConfig(
        provider.get_model(), stream_fn=provider.stream, clock=counting_clock()
    )
    context = AgentContext(tools=[make_tool("a"), make_tool("b")])
    messages = await run_agent_loop([UserMessage("go", 1)], context, config, Recorder())
    results = [message for message in messages if isinstance(message, ToolResultMessage)]
    # (5_000 stamped the system message declaring the tools, before the prompt.)
    assert [result.timestamp for result in results] == [5_001, 5_002]


async def test_the_placeholder_of_a_failed_or_aborted_reply_is_stamped_by_the_clock() -> None:
    async def failing(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        raise RuntimeError("no connection")
        yield  # type: ignore[unreachable]  # makes this an async generator

    model = Model("m")
    config = AgentLoopConfig(model, stream_fn=failing, clock=counting_clock(7))
    [_, failed] = await run_agent_loop([UserMessage("go", 1)], AgentContext(), config, Recorder())
    assert isinstance(failed, AssistantMessage)
    assert (failed.stop_reason, failed.timestamp) == ("error", 7)

    controller = AbortController()
    controller.abort()
    config = AgentLoopConfig(model, stream_fn=failing, clock=counting_clock(9))
    [_, aborted] = await run_agent_loop(
        [UserMessage("go", 1)], AgentContext(), config, Recorder(), signal=controller.signal
    )
    assert isinstance(aborted, AssistantMessage)
    assert (aborted.stop_reason, aborted.timestamp) == ("aborted", 9)


async def test_the_agent_stamps_prompts_queued_messages_and_failures_with_its_clock() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    agent = Agent(model=provider.get_model(), stream_fn=provider.stream, clock=counting_clock(100))
    agent.follow_up("later")
    await agent.prompt("first")
    users = [message for message in agent.state.messages if isinstance(message, UserMessage)]
    # The follow-up was queued (and stamped) before the prompt was.
    assert [(user.content[0].text, user.timestamp) for user in users] == [  # type: ignore[union-attr]
        ("first", 101),
        ("later", 100),
    ]

    def broken(messages: Any) -> Any:
        raise RuntimeError("convert failed")

    agent.convert_to_llm = broken
    await agent.prompt("again")
    failure = agent.state.messages[-1]
    assert isinstance(failure, AssistantMessage)
    assert (failure.error_message, failure.timestamp) == ("convert failed", 103)


# --- interruptions ------------------------------------------------------------------------------


async def test_an_interruption_raised_by_a_tool_leaves_the_run_as_itself(
    engine_stop: type[EngineStop],
) -> None:
    async def stopping(*_: Any) -> str:
        raise engine_stop("workflow cancelled")

    provider = faux()
    tool_then_text(provider, "slow", "stop")
    slow_cancelled = anyio.Event()

    async def slow(*_: Any) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            slow_cancelled.set()
        return "never"  # pragma: no cover

    context = AgentContext(tools=[make_tool("slow", slow), make_tool("stop", stopping)])
    config = AgentLoopConfig(
        provider.get_model(), stream_fn=provider.stream, interruptions=(engine_stop,)
    )
    recorder = Recorder()
    with anyio.fail_after(5), pytest.raises(EngineStop, match="workflow cancelled"):
        await run_agent_loop([UserMessage("go")], context, config, recorder)
    assert slow_cancelled.is_set()
    assert recorder.of_type("tool_execution_end") == []


async def test_an_exception_not_named_an_interruption_is_still_an_error_result() -> None:
    async def stopping(*_: Any) -> str:
        raise EngineStop("workflow cancelled")

    provider = faux()
    tool_then_text(provider, "stop")
    context = AgentContext(tools=[make_tool("stop", stopping)])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    messages = await run_agent_loop([UserMessage("go")], context, config, Recorder())
    [result] = [message for message in messages if isinstance(message, ToolResultMessage)]
    assert result.is_error
    assert config.interruptions == ()


async def test_an_interruption_of_one_config_leaves_every_other_run_unchanged(
    engine_stop: type[EngineStop],
) -> None:
    async def stopping(*_: Any) -> str:
        raise engine_stop("workflow cancelled")

    provider = faux()
    context = AgentContext(tools=[make_tool("stop", stopping)])
    engine = AgentLoopConfig(
        provider.get_model(), stream_fn=provider.stream, interruptions=(engine_stop,)
    )
    plain = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    tool_then_text(provider, "stop")
    with pytest.raises(EngineStop):
        await run_agent_loop([UserMessage("go")], context, engine, Recorder())
    tool_then_text(provider, "stop")
    messages = await run_agent_loop([UserMessage("go")], context, plain, Recorder())
    [result] = [message for message in messages if isinstance(message, ToolResultMessage)]
    assert result.is_error


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call"])
async def test_an_interruption_from_a_tool_hook_passes(
    engine_stop: type[EngineStop], hook: str
) -> None:
    def stop(*_: Any) -> None:
        raise engine_stop(hook)

    provider = faux()
    tool_then_text(provider, "a")
    context = AgentContext(tools=[make_tool("a")])
    hooks: dict[str, Any] = {hook: stop}
    config = AgentLoopConfig(
        provider.get_model(), stream_fn=provider.stream, interruptions=(engine_stop,), **hooks
    )
    with pytest.raises(EngineStop, match=hook):
        await run_agent_loop([UserMessage("go")], context, config, Recorder())


@pytest.mark.parametrize("where", ["call", "iteration"])
async def test_an_interruption_from_the_stream_function_is_not_an_error_reply(
    engine_stop: type[EngineStop], where: str
) -> None:
    def at_call(model: Model, context: Context, options: StreamOptions) -> Any:
        raise engine_stop(where)

    async def in_iteration(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        raise engine_stop(where)
        yield  # type: ignore[unreachable]  # makes this an async generator

    stream_fn = at_call if where == "call" else in_iteration
    config = AgentLoopConfig(Model("m"), stream_fn=stream_fn, interruptions=(engine_stop,))
    recorder = Recorder()
    with pytest.raises(EngineStop, match=where):
        await run_agent_loop([UserMessage("go")], AgentContext(), config, recorder)
    assert recorder.of_type("message_end")[-1].message.role == "user"


async def test_the_agent_lets_an_interruption_pass_and_is_idle_after_it(
    engine_stop: type[EngineStop],
) -> None:
    provider = faux()
    tool_then_text(provider, "stop")

    async def stopping(*_: Any) -> str:
        raise engine_stop("stopped")

    agent = Agent(
        model=provider.get_model(),
        stream_fn=provider.stream,
        tools=[make_tool("stop", stopping)],
        interruptions=(engine_stop,),
    )
    with pytest.raises(EngineStop):
        await agent.prompt("go")
    assert not agent.state.is_streaming
    assert agent.state.error_message is None
    assert agent.signal is None
    assert [message.role for message in agent.state.messages] == ["system", "user", "assistant"]


# --- before_tool_batch --------------------------------------------------------------------------


async def test_a_parallel_batch_announces_its_runnable_calls_in_source_order_first() -> None:
    log: list[str] = []
    run_task: list[int] = []

    async def noting(tool_call_id: str, *_: Any) -> str:
        log.append(f"execute {tool_call_id}")
        return "ok"

    def before_batch(calls: Sequence[ToolCall]) -> None:
        run_task.append(anyio.get_current_task().id)
        log.append("batch " + " ".join(call.id for call in calls))

    def block_b(context: BeforeToolCallContext, signal: Any) -> BeforeToolCallResult | None:
        return BeforeToolCallResult(block=True) if context.tool_call.name == "b" else None

    provider = faux()
    tool_then_text(provider, "a", "b", "missing", "c")
    tools = [make_tool(name, noting) for name in "abc"]
    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        before_tool_batch=before_batch,
        before_tool_call=block_b,
    )

    def emit(event: Any) -> None:
        if event.type == "tool_execution_start":
            run_task.append(anyio.get_current_task().id)

    await run_agent_loop([UserMessage("go")], AgentContext(tools=tools), config, emit)
    assert log[0] == "batch call-a call-c"
    assert sorted(log[1:]) == ["execute call-a", "execute call-c"]
    assert len(set(run_task)) == 1  # the hook runs in the task that emits: the run's own


async def test_a_sequential_batch_announces_each_call_before_it_executes() -> None:
    log: list[str] = []

    async def noting(tool_call_id: str, *_: Any) -> str:
        log.append(f"execute {tool_call_id}")
        return "ok"

    async def before_batch(calls: Sequence[ToolCall]) -> None:
        await anyio.lowlevel.checkpoint()  # an async hook is awaited before the call executes
        log.append("batch " + " ".join(call.id for call in calls))

    provider = faux()
    tool_then_text(provider, "a", "missing", "b")
    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        tool_execution="sequential",
        before_tool_batch=before_batch,
    )
    tools = [make_tool(name, noting) for name in "ab"]

    def emit(event: Any) -> None:
        if event.type == "tool_execution_start":
            log.append(f"start {event.tool_call_id}")

    await run_agent_loop([UserMessage("go")], AgentContext(tools=tools), config, emit)
    assert log == [
        "start call-a",
        "batch call-a",
        "execute call-a",
        "start call-missing",
        "start call-b",
        "batch call-b",
        "execute call-b",
    ]


# --- the reply reader ---------------------------------------------------------------------------


async def test_the_reply_reader_reads_a_stream_as_a_run_does() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("hello")])
    recorder = Recorder()
    model = provider.get_model()
    reader = ReplyReader(model, recorder, clock=counting_clock())
    final = await reader.read(provider.stream, Context(None, [], []), StreamOptions())
    assert final.stop_reason == "stop" and final.content == [TextContent("hello")]
    assert recorder.types[0] == "message_start"
    assert set(recorder.types[1:]) == {"message_update"}


async def test_the_reply_reader_fails_a_broken_stream_and_lets_an_interruption_pass(
    engine_stop: type[EngineStop],
) -> None:
    async def unfinished(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield StreamStart(AssistantMessage([], model.api, model.provider, model.id))

    def stopping(model: Model, context: Context, options: StreamOptions) -> Any:
        raise engine_stop("stop")

    model = Model("m")
    reader = ReplyReader(model, Recorder(), clock=counting_clock(7), log_failures=False)
    final = await reader.read(unfinished, Context(None, [], []), StreamOptions())
    assert (final.stop_reason, final.error_message) == ("error", NO_TERMINAL_EVENT)
    reader = ReplyReader(model, Recorder(), interruptions=(engine_stop,))
    with pytest.raises(EngineStop):
        await reader.read(stopping, Context(None, [], []), StreamOptions())
    failed = await ReplyReader(model, Recorder(), clock=counting_clock(9)).read(
        stopping, Context(None, [], []), StreamOptions()
    )
    assert (failed.stop_reason, failed.error_message, failed.timestamp) == ("error", "stop", 9)


async def test_the_reply_reader_gives_the_reply_as_far_as_it_came_after_a_cancellation() -> None:
    stream = BlockingStream()
    reader = ReplyReader(Model("m"), Recorder())
    with anyio.fail_after(5):
        async with anyio.create_task_group() as task_group:

            async def read() -> None:
                await reader.read(stream, Context(None, [], []), StreamOptions())

            task_group.start_soon(read)
            await stream.started.wait()
            task_group.cancel_scope.cancel()
    aborted = reader.aborted_message()
    assert (aborted.stop_reason, aborted.error_message) == ("aborted", REQUEST_ABORTED)
    assert aborted.content == [TextContent("Hel")]
    assert stream.closed
