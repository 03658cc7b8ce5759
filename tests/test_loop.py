"""The agent loop: event orders of the original, turns, steering, follow-ups, hooks, errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from pi_core import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    NextTurn,
    StreamOptions,
    SystemMessage,
    TextContent,
    TurnContext,
    UserMessage,
    agent_loop,
    agent_loop_continue,
    current_system_prompt,
    run_agent_loop,
    run_agent_loop_continue,
)
from pi_core.providers.faux import faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar, check_transcript
from support import Recorder, call, done_only_stream, faux, logging_getter, make_tool

pytestmark = pytest.mark.anyio


def user(text: str) -> UserMessage:
    return UserMessage(text)


async def test_text_reply_streams_updates_between_start_and_end() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("Hello there, friend")])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    recorder = Recorder()
    prompt = user("hi")
    new = await run_agent_loop([prompt], AgentContext(), config, recorder)
    check_event_grammar(recorder.events)
    assert recorder.types_without_updates() == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    assert recorder.types.count("message_update") >= 3
    assert new[0] is prompt
    assert isinstance(new[1], AssistantMessage)
    assert new[1].content == [TextContent("Hello there, friend")]
    assert recorder.events[-1].messages is new  # type: ignore[union-attr]


async def test_done_only_stream_gives_upstream_order() -> None:
    reply = AssistantMessage([TextContent("ok")], "x", "y", "z")
    config = AgentLoopConfig(Model("m"), stream_fn=done_only_stream(reply))
    recorder = Recorder()
    await run_agent_loop([user("hi")], AgentContext(), config, recorder)
    assert recorder.types == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    start, end = recorder.events[4], recorder.events[5]
    assert start.message is not reply and start.message == reply  # type: ignore[union-attr]
    assert end.message is reply  # type: ignore[union-attr]


async def test_one_tool_then_final_answer() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("done"),
        ]
    )
    context = AgentContext(tools=[make_tool("echo")])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    recorder = Recorder()
    new = await run_agent_loop([user("go")], context, config, recorder)
    check_event_grammar(recorder.events)
    check_transcript(new)
    # The context's tool is declared first, in a system message before the prompt.
    assert recorder.types_without_updates() == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "message_start", "message_end",
        "tool_execution_start", "tool_execution_end", "message_start", "message_end",
        "turn_end", "turn_start", "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    assert [m.role for m in new] == ["system", "user", "assistant", "toolResult", "assistant"]
    assert provider.call_count == 2


async def test_tool_calls_run_whatever_the_stop_reason() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {}, id="c1")], stop_reason="stop"),
            faux_assistant_message("done"),
        ]
    )
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    recorder = Recorder()
    await run_agent_loop([user("go")], AgentContext(tools=[make_tool("echo")]), config, recorder)
    assert recorder.types.count("tool_execution_end") == 1


async def test_callers_context_is_not_mutated() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("a"), faux_assistant_message("b")])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    history: list[Any] = [user("earlier")]
    context = AgentContext(messages=history)
    await run_agent_loop([user("hi")], context, config, Recorder())
    assert context.messages is history and len(history) == 1
    await run_agent_loop_continue(context, config, Recorder())
    assert len(history) == 1


async def test_continue_rejects_empty_context_and_assistant_tail() -> None:
    config = AgentLoopConfig(Model("m"))
    with pytest.raises(ValueError, match=r"^Cannot continue: no messages in context$"):
        await run_agent_loop_continue(AgentContext(), config, Recorder())
    tail = AgentContext(messages=[AssistantMessage([], "a", "p", "m")])
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        await run_agent_loop_continue(tail, config, Recorder())
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        agent_loop_continue(tail, config)


async def test_continue_emits_no_prompt_events() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("ok")])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    recorder = Recorder()
    new = await run_agent_loop_continue(AgentContext(messages=[user("q")]), config, recorder)
    assert recorder.types_without_updates() == [
        "agent_start", "turn_start", "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    assert [m.role for m in new] == ["assistant"]


async def test_a_sync_emit_returning_an_awaitable_is_awaited_before_the_next_event() -> None:
    provider = faux()
    provider.set_responses(
        [faux_assistant_message([faux_tool_call("a", {})]), faux_assistant_message("done")]
    )
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    kinds: list[str] = []
    unsettled: list[str] = []  # events whose awaitable was handed back and has not finished

    async def settle(kind: str) -> None:
        await anyio.lowlevel.checkpoint()
        unsettled.remove(kind)

    def emit(event: Any) -> Any:
        assert not unsettled, f"{event.type} emitted before {unsettled} was awaited"
        kinds.append(event.type)
        if len(kinds) % 2:  # every other event hands back None, which needs no awaiting
            return None
        unsettled.append(event.type)
        return settle(event.type)

    await run_agent_loop([user("go")], AgentContext(tools=[make_tool("a")]), config, emit)
    assert not unsettled
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert "tool_execution_end" in kinds


async def test_steering_polled_at_start_is_injected_before_first_call() -> None:
    provider = faux()
    seen: list[list[str]] = []

    def reply(context: Context, *_: Any) -> AssistantMessage:
        seen.append([m.role for m in context.messages])
        return faux_assistant_message("ok")

    provider.set_responses([reply])
    queue = [user("steer")]
    polls: list[str] = []

    def steering() -> list[Any]:
        polls.append("S")
        drained, queue[:] = list(queue), []
        return drained

    def follow_ups() -> list[Any]:
        polls.append("F")
        return []

    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        get_steering_messages=steering,
        get_follow_up_messages=follow_ups,
    )
    recorder = Recorder()
    await run_agent_loop([user("go")], AgentContext(), config, recorder)
    check_event_grammar(recorder.events)
    assert seen == [["user", "user"]]
    assert polls == ["S", "S", "F"]


async def test_steering_after_a_batch_starts_a_new_turn() -> None:
    provider = faux()
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("after steer"),
        ]
    )
    queue: list[Any] = []

    async def echo(*_: Any) -> str:
        queue.append(user("steer"))
        return "echoed"

    def steering() -> list[Any]:
        drained, queue[:] = list(queue), []
        return drained

    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        get_steering_messages=steering,
    )
    recorder = Recorder()
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[make_tool("echo", echo)]), config, recorder
    )
    check_event_grammar(recorder.events)
    roles = ["system", "user", "assistant", "toolResult", "user", "assistant"]
    assert [m.role for m in new] == roles
    types = recorder.types_without_updates()
    assert types[types.index("turn_end") :] == [
        "turn_end", "turn_start", "message_start", "message_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip


async def test_follow_ups_continue_the_run_when_it_would_stop() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    follow = [[user("more")], []]
    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        get_follow_up_messages=lambda: follow.pop(0),
    )
    recorder = Recorder()
    new = await run_agent_loop([user("go")], AgentContext(), config, recorder)
    check_event_grammar(recorder.events)
    assert [m.role for m in new] == ["user", "assistant", "user", "assistant"]
    assert recorder.types_without_updates().count("turn_start") == 2


async def test_should_stop_after_turn_gives_upstream_list_and_skips_polls() -> None:
    provider = faux()
    provider.set_responses(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c1")], stop_reason="toolUse")]
    )
    polls: list[str] = []
    contexts: list[TurnContext] = []

    def stop(turn: TurnContext) -> bool:
        contexts.append(turn)
        return True

    config = AgentLoopConfig(
        provider.get_model(),
        stream_fn=provider.stream,
        should_stop_after_turn=stop,
        get_steering_messages=logging_getter(polls, "S"),
        get_follow_up_messages=logging_getter(polls, "F"),
    )
    recorder = Recorder()
    new = await run_agent_loop(
        [user("go")], AgentContext(tools=[make_tool("echo")]), config, recorder
    )
    assert recorder.types_without_updates() == [
        "agent_start", "turn_start", "message_start", "message_end",  # the tool's declaration
        "message_start", "message_end",
        "message_start", "message_end", "tool_execution_start", "tool_execution_end",
        "message_start", "message_end", "turn_end", "agent_end",
    ]  # fmt: skip
    assert polls == ["S"]
    [turn] = contexts
    assert turn.new_messages is new
    assert turn.tool_results is recorder.of_type("turn_end")[0].tool_results
    assert turn.context.messages[-1] is turn.tool_results[0]


async def test_prepare_next_turn_replaces_context_model_and_thinking() -> None:
    provider = FauxModels()
    order: list[str] = []

    def prepare(turn: TurnContext) -> NextTurn:
        order.append("prepare")
        # The transcript owns the prompt: the new context's leading system message says it.
        messages = [m for m in turn.context.messages if m.role != "system"]
        leading = SystemMessage("second prompt")
        context = AgentContext("", [leading, *messages], turn.context.tools)
        return NextTurn(context=context, model=Model("other", api="x"), thinking_level="high")

    def stop(_turn: TurnContext) -> bool:
        order.append("stop?")
        return False

    config = AgentLoopConfig(
        Model("first"),
        stream_fn=provider.stream,
        prepare_next_turn=prepare,
        should_stop_after_turn=stop,
    )
    await run_agent_loop(
        [user("go")], AgentContext("first prompt", tools=[make_tool("echo")]), config, Recorder()
    )
    # It runs only when another turn follows: after the first turn's stop check, not the last.
    assert order == ["stop?", "prepare", "stop?"]
    assert provider.seen[0] == ("first", "first prompt", None)
    assert provider.seen[1] == ("other", "second prompt", "high")


class FauxModels:
    """Replies with a tool call first, then text; records model, system prompt and reasoning."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str | None]] = []

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        from pi_core import StreamDone

        self.seen.append((model.id, current_system_prompt(context.messages), options.reasoning))
        content: list[Any] = [call("echo", f"c{len(self.seen)}")] if len(self.seen) == 1 else []
        yield StreamDone("toolUse", AssistantMessage(content, "x", "y", model.id))


async def test_hooks_may_be_async_and_see_the_api_key() -> None:
    keys: list[str | None] = []

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        from pi_core import StreamDone

        keys.append(options.api_key)
        assert options.signal is not None
        yield StreamDone("stop", AssistantMessage([TextContent("x")], "a", "p", model.id))

    async def transform(messages: list[Any], signal: Any) -> list[Any]:
        return [*messages, user("injected")]

    async def convert(messages: list[Any]) -> list[Any]:
        assert [m.content for m in messages] == ["go", "injected"]
        return list(messages)

    async def get_key(provider: str) -> str:
        assert provider == "unknown"
        return "secret"

    config = AgentLoopConfig(
        Model("m"),
        stream_fn=stream,
        transform_context=transform,
        convert_to_llm=convert,
        get_api_key=get_key,
        options=StreamOptions(api_key="fallback"),
    )
    await run_agent_loop([user("go")], AgentContext(), config, Recorder())
    config2 = AgentLoopConfig(
        Model("m"),
        stream_fn=stream,
        get_api_key=lambda _p: None,
        options=StreamOptions(api_key="fallback"),
    )
    await run_agent_loop([user("go")], AgentContext(), config2, Recorder())
    assert keys == ["secret", "fallback"]


async def test_stream_function_exception_becomes_error_message() -> None:
    def exploding(*_: Any) -> Any:
        raise RuntimeError("provider exploded")

    config = AgentLoopConfig(Model("m", api="a", provider="p"), stream_fn=exploding)
    recorder = Recorder()
    new = await run_agent_loop([user("go")], AgentContext(), config, recorder)
    check_event_grammar(recorder.events)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.stop_reason, final.error_message) == ("error", "provider exploded")
    assert (final.api, final.provider, final.model) == ("a", "p", "m")
    assert recorder.types[-2:] == ["turn_end", "agent_end"]


async def test_exception_mid_stream_keeps_the_partial() -> None:
    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        from pi_core import StreamStart, TextDelta, TextStart

        partial = AssistantMessage([TextContent("")], "a", "p", "m")
        yield StreamStart(partial)
        yield TextStart(0, partial)
        partial.content[0].text = "part"  # type: ignore[union-attr]
        yield TextDelta(0, "part", partial)
        raise ConnectionError("connection lost")

    config = AgentLoopConfig(Model("m"), stream_fn=stream)
    recorder = Recorder()
    new = await run_agent_loop([user("go")], AgentContext(), config, recorder)
    check_event_grammar(recorder.events)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == "error" and final.error_message == "connection lost"
    assert final.content == [TextContent("part")]


async def test_stream_without_terminal_event_is_an_error_not_a_hang() -> None:
    async def stream(*_: Any) -> AsyncIterator[AssistantMessageEvent]:
        return
        yield  # pragma: no cover

    config = AgentLoopConfig(Model("m"), stream_fn=stream)
    new = await run_agent_loop([user("go")], AgentContext(), config, Recorder())
    assert new[-1].error_message == "Stream ended without a terminal event"  # type: ignore[union-attr]


@pytest.mark.parametrize("hook", ["convert_to_llm", "transform_context", "get_api_key"])
async def test_hook_exceptions_propagate(hook: str) -> None:
    def boom(*_: Any) -> Any:
        raise LookupError(f"{hook} failed")

    provider = faux()
    provider.set_responses([faux_assistant_message("never")])
    hooks: dict[str, Any] = {hook: boom}
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream, **hooks)
    with pytest.raises(LookupError, match=f"{hook} failed"):
        await run_agent_loop([user("go")], AgentContext(), config, Recorder())
    with anyio.fail_after(5), pytest.raises(LookupError, match=f"{hook} failed"):
        async with agent_loop([user("go")], AgentContext(), config) as events:
            async for _ in events:
                pass


async def test_queue_getter_exception_propagates() -> None:
    def boom() -> list[Any]:
        raise KeyError("queue broke")

    config = AgentLoopConfig(Model("m"), get_steering_messages=boom)
    with pytest.raises(KeyError):
        await run_agent_loop([user("go")], AgentContext(), config, Recorder())


async def test_agent_loop_streams_events_and_returns_new_messages() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("hello")])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    seen = []
    async with agent_loop([user("hi")], AgentContext(), config) as events:
        async for event in events:
            seen.append(event)
        new = await events.result()
    check_event_grammar(seen)
    assert seen[-1].messages is new  # type: ignore[union-attr]
    assert await events.result() is new


async def test_agent_loop_result_drains_unread_events() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("hello")])
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    async with agent_loop([user("hi")], AgentContext(), config, buffer_size=0) as events:
        new = await events.result()
    assert [m.role for m in new] == ["user", "assistant"]


async def test_leaving_agent_loop_early_cancels_the_run() -> None:
    cancelled = anyio.Event()
    started = anyio.Event()

    async def forever(*_: Any) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    provider = faux()
    provider.set_responses(
        [faux_assistant_message([faux_tool_call("wait", {}, id="c1")], stop_reason="toolUse")]
    )
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    context = AgentContext(tools=[make_tool("wait", forever)])
    with anyio.fail_after(5):
        async with agent_loop([user("go")], context, config) as events:
            async for event in events:
                if event.type == "tool_execution_start":
                    await started.wait()
                    break
        assert cancelled.is_set()
        with pytest.raises(RuntimeError):
            await events.result()


async def test_custom_messages_are_filtered_by_default_convert() -> None:
    class Note:
        role = "note"

    seen: list[list[str]] = []

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        from pi_core import StreamDone

        seen.append([m.role for m in context.messages])
        yield StreamDone("stop", AssistantMessage([], "a", "p", "m"))

    config = AgentLoopConfig(Model("m"), stream_fn=stream)
    await run_agent_loop([Note(), user("go")], AgentContext(), config, Recorder())
    assert seen == [["user"]]


def test_config_rejects_bad_options() -> None:
    with pytest.raises(ValueError, match="tool_execution"):
        AgentLoopConfig(Model("m"), tool_execution="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_parallel_tools"):
        AgentLoopConfig(Model("m"), max_parallel_tools=0)
