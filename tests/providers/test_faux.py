"""FauxProvider: scripted replies, streaming, abort, pacing, usage and the provider registry."""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any, Literal

import anyio
import anyio.lowlevel
import attrs
import pytest

from pi_core import (
    AbortController,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Model,
    ModelCost,
    StreamDone,
    StreamError,
    StreamOptions,
    StreamStart,
    TextContent,
    TextDelta,
    TextEnd,
    ThinkingContent,
    ThinkingDelta,
    ThinkingEnd,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolResultMessage,
    Usage,
    UserMessage,
    register_provider,
    stream_simple,
)
from pi_core.providers._faux_stream import serialize_context
from pi_core.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)

pytestmark = pytest.mark.anyio

CONTEXT = Context(messages=[UserMessage("hi")])
ALPHABET = "abcdefghijklmnopqrstuvwxyz"


# --- helpers ------------------------------------------------------------------------------------


async def collect(
    faux: FauxProvider,
    *,
    context: Context = CONTEXT,
    options: StreamOptions | None = None,
    model: Model | None = None,
    abort_when: Callable[[list[AssistantMessageEvent]], bool] | None = None,
) -> list[AssistantMessageEvent]:
    """All events of one call; ``abort_when(events_so_far)`` may abort it from inside the loop."""
    controller = AbortController()
    options = attrs.evolve(options or StreamOptions(), signal=controller.signal)
    model = model or first_model(faux)
    events: list[AssistantMessageEvent] = []
    with anyio.fail_after(10):
        async for event in faux.stream(model, context, options):
            events.append(event)
            if abort_when is not None and abort_when(events):
                controller.abort()
    return events


def first_model(faux: FauxProvider) -> Model:
    model = faux.get_model()
    assert model is not None
    return model


def types(events: list[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]


def final_message(events: list[AssistantMessageEvent]) -> AssistantMessage:
    last = events[-1]
    if isinstance(last, StreamDone):
        return last.message
    assert isinstance(last, StreamError)
    return last.error


def after(event_type: str, nth: int = 1) -> Callable[[list[AssistantMessageEvent]], bool]:
    """An abort trigger: true right after the ``nth`` event of ``event_type`` arrived."""

    def trigger(events: list[AssistantMessageEvent]) -> bool:
        return events[-1].type == event_type and types(events).count(event_type) == nth

    return trigger


def partial_of(event: AssistantMessageEvent) -> AssistantMessage:
    assert not isinstance(event, StreamDone | StreamError)
    return event.partial


async def simple_events(
    model: Model, options: StreamOptions | None = None
) -> list[AssistantMessageEvent]:
    """All events of ``stream_simple`` (the registry) for one call."""
    result = stream_simple(model, CONTEXT, options)
    assert isinstance(result, AsyncIterable)
    with anyio.fail_after(10):
        return [event async for event in result]


def faux_with(*steps: Any, **kwargs: Any) -> FauxProvider:
    faux = FauxProvider(**kwargs)
    faux.set_responses(steps)
    return faux


# --- models and construction --------------------------------------------------------------------


def faux_model(model_id: str, **fields: Any) -> Model:
    """A model with upstream's faux defaults."""
    # mypy's attrs plugin rejects any value for ``input`` (its converter is the generic ``tuple``).
    fields = {"input": ("text", "image"), **fields}
    return Model(
        model_id, base_url="http://localhost:0", context_window=128000, max_tokens=16384, **fields
    )


async def test_default_model() -> None:
    faux = FauxProvider()
    assert (faux.api, faux.provider) == ("faux", "faux")
    assert faux.models == (faux_model("faux-1", name="Faux Model", api="faux", provider="faux"),)
    assert faux.get_model() is faux.models[0]
    assert faux.get_model("faux-1") is faux.models[0]
    assert faux.get_model("nope") is None


async def test_models_from_ids_and_dicts() -> None:
    faux = FauxProvider(
        api="my-api",
        provider="me",
        models=[
            "small",
            {
                "id": "big",
                "name": "Big",
                "reasoning": True,
                "max_tokens": 100,
                "cost": {"input": 3},
            },
        ],
    )
    small, big = faux.models
    assert small == faux_model("small", api="my-api", provider="me")
    assert (big.name, big.reasoning, big.max_tokens, big.context_window) == (
        "Big",
        True,
        100,
        128000,
    )
    assert big.cost == ModelCost(input=3)
    assert (big.api, big.provider) == ("my-api", "me")
    assert faux.get_model() is small
    assert faux.get_model("big") is big


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"models": []}, ValueError, "at least one model"),
        ({"models": [{"name": "x"}]}, ValueError, "needs a non-empty string 'id'"),
        ({"models": [{"id": ""}]}, ValueError, "needs a non-empty string 'id'"),
        ({"models": [42]}, TypeError, "model id or a dict"),
        ({"models": [{"id": "a", "colour": "red"}]}, ValueError, "unknown Model fields.*colour"),
        ({"models": [{"id": "a", "api": "other"}]}, ValueError, "sets api or provider"),
        ({"models": ["a", {"id": "a"}]}, ValueError, "duplicate ids: a"),
        ({"api": ""}, ValueError, "api must be a non-empty string"),
        ({"provider": None}, ValueError, "provider must be a non-empty string"),
        ({"tokens_per_second": 0}, ValueError, "tokens_per_second must be > 0"),
        ({"tokens_per_second": -5.0}, ValueError, "tokens_per_second must be > 0"),
        ({"tokens_per_second": math.nan}, ValueError, "tokens_per_second must be > 0"),
        ({"tokens_per_second": "fast"}, TypeError, "tokens_per_second must be a number"),
        ({"tokens_per_second": True}, TypeError, "tokens_per_second must be a number"),
        ({"token_size": 3}, TypeError, "token_size must be a .min, max. pair"),
        ({"token_size": (1, 2, 3)}, TypeError, "token_size must be a .min, max. pair"),
        ({"token_size": (1.5, 2)}, TypeError, "token_size bounds must be integers"),
    ],
)
async def test_constructor_rejects_bad_input(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        FauxProvider(**kwargs)


@pytest.mark.parametrize(
    ("token_size", "chunk_chars"),
    [((0, 0), 4), ((-3, 1), 4), ((5, 3), 12), ((2, 2), 8)],
)
async def test_token_size_is_clamped(token_size: tuple[int, int], chunk_chars: int) -> None:
    # Upstream's clamp: min = max(1, min(min, max)), then max = max(min, max).
    faux = faux_with(faux_assistant_message(ALPHABET * 2), token_size=token_size)
    deltas = [e.delta for e in await collect(faux) if isinstance(e, TextDelta)]
    assert "".join(deltas) == ALPHABET * 2
    assert all(len(delta) == chunk_chars for delta in deltas[:-1])


# --- builders -----------------------------------------------------------------------------------


async def test_block_builders() -> None:
    assert faux_text("a") == TextContent("a")
    assert faux_thinking("b") == ThinkingContent("b")
    assert faux_tool_call("f", {"x": 1}, id="c1") == ToolCall("c1", "f", {"x": 1})
    generated = faux_tool_call("f", {})
    assert re.fullmatch(r"tool:\d+:[0-9a-f]+", generated.id)
    assert generated.id != faux_tool_call("f", {}).id


async def test_assistant_message_builder() -> None:
    message = faux_assistant_message("hello")
    assert message.content == [TextContent("hello")]
    assert (message.api, message.provider, message.model) == ("faux", "faux", "faux-1")
    assert (message.stop_reason, message.error_message, message.usage) == ("stop", None, Usage())
    call = faux_tool_call("f", {}, id="c")
    assert faux_assistant_message(call, "toolUse").content == [call]
    blocks: list[TextContent | ThinkingContent | ToolCall] = [faux_thinking("t"), faux_text("x")]
    failed = faux_assistant_message(blocks, "error", "boom", response_id="r1", timestamp=1234)
    assert failed.content == blocks
    assert failed.content is not blocks
    assert (failed.stop_reason, failed.error_message) == ("error", "boom")
    assert (failed.response_id, failed.timestamp) == ("r1", 1234)


async def test_assistant_message_builder_rejects_foreign_blocks() -> None:
    with pytest.raises(TypeError, match="not ImageContent"):
        faux_assistant_message([ImageContent("QUJD", "image/png")])  # type: ignore[list-item]


# --- queue and call count -----------------------------------------------------------------------


async def test_step_is_taken_when_stream_is_called() -> None:
    faux = faux_with(faux_assistant_message("one"), faux_assistant_message("two"))
    first = faux.stream(first_model(faux), CONTEXT, StreamOptions())
    second = faux.stream(first_model(faux), CONTEXT, StreamOptions())
    # Nothing has been iterated yet: bookkeeping happened in the calls themselves.
    assert (faux.call_count, faux.pending_response_count) == (2, 0)
    # Iterating in the opposite order still gives each call its own step.
    second_events = [event async for event in second]
    first_events = [event async for event in first]
    assert final_message(second_events).content == [TextContent("two")]
    assert final_message(first_events).content == [TextContent("one")]


async def test_exhausted_queue_gives_a_single_error() -> None:
    faux = faux_with(faux_assistant_message("only"))
    assert final_message(await collect(faux)).content == [TextContent("only")]
    events = await collect(faux)
    assert types(events) == ["error"]
    error = events[0]
    assert isinstance(error, StreamError)
    assert error.reason == "error"
    assert error.error.content == []
    assert (error.error.stop_reason, error.error.error_message) == (
        "error",
        "No more faux responses queued",
    )
    assert (error.error.api, error.error.provider, error.error.model) == ("faux", "faux", "faux-1")
    # Upstream estimates usage for this message too: "user:hi" is 7 characters, 2 tokens.
    assert error.error.usage == Usage(input=2, total_tokens=2)
    assert (faux.call_count, faux.pending_response_count) == (2, 0)


async def test_set_and_append_responses() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("a"), faux_assistant_message("b")])
    faux.set_responses([faux_assistant_message("c")])
    faux.append_responses([faux_assistant_message("d"), faux_assistant_message("e")])
    assert faux.pending_response_count == 3
    texts = [final_message(await collect(faux)).content for _ in range(3)]
    assert texts == [[TextContent("c")], [TextContent("d")], [TextContent("e")]]
    assert (faux.call_count, faux.pending_response_count) == (3, 0)


async def test_steps_are_checked_when_queued() -> None:
    faux = FauxProvider()
    with pytest.raises(TypeError, match="AssistantMessage or a factory, not str"):
        faux.set_responses(["hello"])  # type: ignore[list-item]
    bad_block = faux_assistant_message("x")
    bad_block.content.append(ImageContent("QUJD", "image/png"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not ImageContent"):
        faux.append_responses([bad_block])
    assert faux.pending_response_count == 0


# --- factories ----------------------------------------------------------------------------------


async def test_sync_factory_gets_the_call() -> None:
    seen: list[tuple[Context, StreamOptions, int, Model]] = []

    def factory(
        context: Context, options: StreamOptions, call_count: int, model: Model
    ) -> AssistantMessage:
        seen.append((context, options, call_count, model))
        return faux_assistant_message(f"call {call_count}")

    faux = faux_with(faux_assistant_message("first"), factory)
    await collect(faux)
    options = StreamOptions(session_id="s")
    events = await collect(faux, options=options)
    assert final_message(events).content == [TextContent("call 2")]
    [(context, got_options, call_count, model)] = seen
    assert context is CONTEXT
    assert got_options.session_id == "s"
    assert (call_count, model) == (2, faux.models[0])


async def test_async_factory() -> None:
    async def factory(
        context: Context, options: StreamOptions, call_count: int, model: Model
    ) -> AssistantMessage:
        await anyio.lowlevel.checkpoint()
        return faux_assistant_message([faux_text("async"), faux_tool_call("f", {}, id="c")])

    events = await collect(faux_with(factory))
    assert types(events)[0] == "start"
    assert final_message(events).content == [TextContent("async"), ToolCall("c", "f", {})]


@pytest.mark.parametrize("is_async", [False, True])
async def test_raising_factory_gives_a_single_error(is_async: bool) -> None:
    def sync_factory(*_: object) -> AssistantMessage:
        raise RuntimeError("script broke")

    async def async_factory(*_: object) -> AssistantMessage:
        await anyio.lowlevel.checkpoint()
        raise RuntimeError("script broke")

    faux = faux_with(async_factory if is_async else sync_factory)
    events = await collect(faux)
    assert types(events) == ["error"]
    error = final_message(events)
    assert (error.stop_reason, error.error_message, error.content) == ("error", "script broke", [])
    assert error.usage == Usage()


async def test_factory_returning_something_else_is_an_error() -> None:
    events = await collect(faux_with(lambda *_: "not a message"))
    assert types(events) == ["error"]
    assert final_message(events).error_message == (
        "a faux response factory must return an AssistantMessage, not str"
    )


async def test_exception_without_text_is_reported_by_its_type() -> None:
    def factory(*_: object) -> AssistantMessage:
        raise KeyError()

    assert final_message(await collect(faux_with(factory))).error_message == "KeyError"


async def test_unserializable_arguments_are_an_error() -> None:
    # The estimate serializes tool arguments as JSON, so a script that cannot be sent fails early.
    scripted = faux_assistant_message(faux_tool_call("f", {"tags": {1, 2}}, id="c"), "toolUse")
    events = await collect(faux_with(scripted))
    assert types(events) == ["error"]
    assert final_message(events).error_message == "Object of type set is not JSON serializable"


# --- the reply ----------------------------------------------------------------------------------


async def test_reply_is_a_copy_with_the_providers_names() -> None:
    scripted = faux_assistant_message(
        [faux_tool_call("f", {"nested": [1]}, id="c")], "toolUse", response_id="r", timestamp=5
    )
    faux = FauxProvider(api="api-x", provider="prov-x", models=["m1", "m2"])
    faux.set_responses([scripted, scripted])
    first = final_message(await collect(faux, model=faux.get_model("m2")))
    second = final_message(await collect(faux))
    assert (first.api, first.provider, first.model) == ("api-x", "prov-x", "m2")
    assert second.model == "m1"
    assert (first.response_id, first.timestamp, first.stop_reason) == ("r", 5, "toolUse")
    # Deep copies: the script and the two replies share nothing.
    block = first.content[0]
    assert isinstance(block, ToolCall)
    block.arguments["nested"].append(2)
    assert scripted.content == [ToolCall("c", "f", {"nested": [1]})]
    assert second.content == [ToolCall("c", "f", {"nested": [1]})]
    assert (scripted.api, scripted.model, scripted.usage) == ("faux", "faux-1", Usage())


async def test_event_sequence_of_every_block_kind() -> None:
    call = faux_tool_call("add", {"a": 1, "b": [2, 3]}, id="c1")
    scripted = faux_assistant_message(
        [faux_thinking("let me think about it"), faux_text("The sum is coming."), call], "toolUse"
    )
    events = await collect(faux_with(scripted, token_size=(1, 1)))
    # 4-character chunks: 21 thinking chars -> 6 deltas, 18 text chars -> 5, 17 JSON chars -> 5.
    assert types(events) == [
        "start",
        "thinking_start",
        *["thinking_delta"] * 6,
        "thinking_end",
        "text_start",
        *["text_delta"] * 5,
        "text_end",
        "toolcall_start",
        *["toolcall_delta"] * 5,
        "toolcall_end",
        "done",
    ]
    thinking = "".join(e.delta for e in events if isinstance(e, ThinkingDelta))
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    arguments = "".join(e.delta for e in events if isinstance(e, ToolCallDelta))
    assert (thinking, text) == ("let me think about it", "The sum is coming.")
    assert arguments == '{"a":1,"b":[2,3]}' == json.dumps(call.arguments, separators=(",", ":"))
    [thinking_end] = [e for e in events if isinstance(e, ThinkingEnd)]
    [text_end] = [e for e in events if isinstance(e, TextEnd)]
    [call_end] = [e for e in events if isinstance(e, ToolCallEnd)]
    assert (thinking_end.content_index, thinking_end.content) == (0, "let me think about it")
    assert (text_end.content_index, text_end.content) == (1, "The sum is coming.")
    assert (call_end.content_index, call_end.tool_call) == (2, call)
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.reason == "toolUse"
    assert done.message.content == scripted.content


async def contents_as_streamed(faux: FauxProvider) -> tuple[list[Any], list[Any]]:
    """The events of one call, and a deep copy of each event's partial content when it came."""
    events: list[Any] = []
    contents: list[Any] = []
    with anyio.fail_after(10):
        async for event in faux.stream(first_model(faux), CONTEXT, StreamOptions()):
            events.append(event)
            if not isinstance(event, StreamDone | StreamError):
                contents.append(copy.deepcopy(event.partial.content))
    return events, contents


async def test_the_partial_is_one_live_message_that_becomes_the_final_one() -> None:
    scripted = faux_assistant_message("abcdefghij", "length", "cut short")
    events, contents = await contents_as_streamed(faux_with(scripted, token_size=(1, 1)))
    assert types(events) == ["start", "text_start", *["text_delta"] * 3, "text_end", "done"]
    start = events[0]
    assert isinstance(start, StreamStart)
    final = final_message(events)
    # One message, as a provider's PartialMessage: every event carries it, and it is the final.
    assert all(partial_of(event) is final for event in events[:-1])
    # It started as the final message without content: stop reason, usage, error included.
    assert contents[0] == []
    assert (final.stop_reason, final.error_message) == ("length", "cut short")
    # It grew as the reply streamed: what each event saw when it came.
    assert contents[1:] == [
        [TextContent("")],
        [TextContent("abcd")],
        [TextContent("abcdefgh")],
        [TextContent("abcdefghij")],
        [TextContent("abcdefghij")],
    ]
    assert final.content == scripted.content
    assert final is not scripted


async def test_tool_call_arguments_parse_as_they_stream() -> None:
    call = faux_tool_call("f", {"path": "/tmp/x"}, id="c")
    faux = faux_with(faux_assistant_message(call, "toolUse"), token_size=(1, 1))
    events, contents = await contents_as_streamed(faux)
    deltas = ["toolcall_delta"] * 5
    assert types(events) == ["start", "toolcall_start", *deltas, "toolcall_end", "done"]
    assert "".join(e.delta for e in events if isinstance(e, ToolCallDelta)) == '{"path":"/tmp/x"}'
    arguments = [content[0].arguments for content in contents[1:]]
    # Chunks '{"pa', 'th":', '"/tm', 'p/x"', '}': an unfinished string shows as its prefix.
    assert arguments == [{}, {}, {}, {"path": "/tm"}, *[{"path": "/tmp/x"}] * 3]
    end = events[-2]
    assert isinstance(end, ToolCallEnd)
    assert end.tool_call == call
    assert end.partial.content == [call]


async def test_signatures_reach_the_partial_at_the_block_end() -> None:
    signed = faux_assistant_message(
        [ThinkingContent("secret", "sig-1", redacted=True), TextContent("hi", "sig-2")]
    )
    events, contents = await contents_as_streamed(faux_with(signed))
    [delta_at] = [i for i, e in enumerate(events) if isinstance(e, ThinkingDelta)]
    assert contents[delta_at] == [ThinkingContent("secret", redacted=True)]
    [end_at] = [i for i, e in enumerate(events) if isinstance(e, TextEnd)]
    assert contents[end_at] == signed.content


async def test_empty_blocks_stream_one_empty_chunk() -> None:
    scripted = faux_assistant_message([faux_text(""), faux_tool_call("f", {}, id="c")], "toolUse")
    events = await collect(faux_with(scripted))
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    deltas = [e.delta for e in events if isinstance(e, TextDelta | ToolCallDelta)]
    assert deltas == ["", "{}"]


async def test_message_without_content() -> None:
    events = await collect(faux_with(faux_assistant_message([])))
    assert types(events) == ["start", "done"]


@pytest.mark.parametrize("stop_reason", ["error", "aborted"])
async def test_scripted_failure_ends_with_an_error_after_the_content(
    stop_reason: Literal["error", "aborted"],
) -> None:
    scripted = faux_assistant_message("partial answer", stop_reason, "upstream said no")
    events = await collect(faux_with(scripted))
    assert types(events)[:2] == ["start", "text_start"]
    assert types(events)[-2:] == ["text_end", "error"]
    error = events[-1]
    assert isinstance(error, StreamError)
    assert error.reason == stop_reason
    assert error.error.content == [TextContent("partial answer")]
    assert error.error.error_message == "upstream said no"


async def test_done_reason_is_the_stop_reason() -> None:
    events = await collect(faux_with(faux_assistant_message("x", "length")))
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.reason == "length"


async def test_options_may_be_omitted() -> None:
    faux = faux_with(faux_assistant_message("x"))
    events = [event async for event in faux.stream(first_model(faux), CONTEXT)]
    assert types(events)[-1] == "done"


# --- chunking -----------------------------------------------------------------------------------


def expected_chunks(text: str, seed: int, low: int, high: int) -> list[str]:
    """Upstream's split, written out: each chunk is 4 * randint(low, high) characters."""
    rng = random.Random(seed)
    chunks, start = [], 0
    while start < len(text):
        size = 4 * rng.randint(low, high)
        chunks.append(text[start : start + size])
        start += size
    return chunks


async def test_seeded_chunking_is_reproducible() -> None:
    text = ALPHABET * 8
    scripted = faux_assistant_message(text)
    runs = [
        [e.delta for e in await collect(faux_with(scripted, seed=42)) if isinstance(e, TextDelta)]
        for _ in range(2)
    ]
    assert runs[0] == runs[1] == expected_chunks(text, 42, 3, 5)


async def test_seeded_chunking_continues_across_blocks_and_calls() -> None:
    # One generator per provider: the second block and the second call draw where the first stopped.
    first, second = "x" * 50, "y" * 70
    faux = faux_with(
        faux_assistant_message([faux_thinking(first), faux_text(second)]),
        faux_assistant_message(first),
        seed=7,
        token_size=(2, 6),
    )
    call_one = [e.delta for e in await collect(faux) if isinstance(e, TextDelta | ThinkingDelta)]
    call_two = [e.delta for e in await collect(faux) if isinstance(e, TextDelta)]
    rng = random.Random(7)

    def split(text: str) -> list[str]:
        chunks, start = [], 0
        while start < len(text):
            size = 4 * rng.randint(2, 6)
            chunks.append(text[start : start + size])
            start += size
        return chunks

    assert call_one == split(first) + split(second)
    assert call_two == split(first)


# --- pacing -------------------------------------------------------------------------------------


async def test_pacing_sleeps_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)
        await anyio.lowlevel.checkpoint()

    monkeypatch.setattr(anyio, "sleep", fake_sleep)
    # 2-token chunks are 8 characters: 20 characters -> 8, 8, 4 -> 2, 2, 1 tokens at 10 tokens/s.
    faux = faux_with(faux_assistant_message("x" * 20), tokens_per_second=10, token_size=(2, 2))
    events = await collect(faux)
    assert types(events)[-1] == "done"
    assert delays == [0.2, 0.2, 0.1]


async def test_no_pacing_means_no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)

    monkeypatch.setattr(anyio, "sleep", fake_sleep)
    await collect(faux_with(faux_assistant_message("x" * 100)))
    assert delays == []


async def test_paced_stream_runs_for_real() -> None:
    faux = faux_with(faux_assistant_message("paced " * 20), tokens_per_second=1e6)
    assert final_message(await collect(faux)).content == [TextContent("paced " * 20)]


# --- abort --------------------------------------------------------------------------------------


def assert_aborted(events: list[AssistantMessageEvent], content: list[Any]) -> None:
    error = events[-1]
    assert isinstance(error, StreamError)
    assert error.reason == "aborted"
    assert error.error.content == content
    assert (error.error.stop_reason, error.error.error_message) == (
        "aborted",
        "Request was aborted",
    )


async def test_already_aborted_gives_only_the_error() -> None:
    controller = AbortController()
    controller.abort()
    faux = faux_with(faux_assistant_message("never"))
    options = StreamOptions(signal=controller.signal)
    events = [e async for e in faux.stream(first_model(faux), CONTEXT, options)]
    assert types(events) == ["error"]
    assert_aborted(events, [])
    assert final_message(events).usage.output == 2  # the estimate of "never" is kept
    assert (faux.call_count, faux.pending_response_count) == (1, 0)


async def test_abort_after_start() -> None:
    events = await collect(faux_with(faux_assistant_message("hello")), abort_when=after("start"))
    assert types(events) == ["start", "error"]
    assert_aborted(events, [])


async def test_abort_during_text() -> None:
    faux = faux_with(faux_assistant_message(ALPHABET * 2), token_size=(1, 1))
    events = await collect(faux, abort_when=after("text_delta", 2))
    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "error"]
    assert_aborted(events, [TextContent("abcdefgh")])


async def test_abort_during_thinking() -> None:
    scripted = faux_assistant_message([faux_thinking(ALPHABET), faux_text("answer")])
    events = await collect(
        faux_with(scripted, token_size=(1, 1)), abort_when=after("thinking_delta")
    )
    assert types(events) == ["start", "thinking_start", "thinking_delta", "error"]
    assert_aborted(events, [ThinkingContent("abcd")])


async def test_abort_during_tool_call() -> None:
    call = faux_tool_call("write", {"text": ALPHABET}, id="c")
    scripted = faux_assistant_message([faux_text("ok"), call], "toolUse")
    events = await collect(
        faux_with(scripted, token_size=(1, 1)), abort_when=after("toolcall_delta")
    )
    assert types(events)[-3:] == ["toolcall_start", "toolcall_delta", "error"]
    assert "toolcall_end" not in types(events)
    assert_aborted(events, [TextContent("ok"), ToolCall("c", "write", {})])


async def test_abort_between_blocks_skips_the_next_block() -> None:
    scripted = faux_assistant_message([faux_text("one"), faux_text("two")])
    events = await collect(faux_with(scripted), abort_when=after("text_end"))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert_aborted(events, [TextContent("one")])


async def test_abort_after_the_last_block_changes_nothing() -> None:
    # As upstream: abort is checked before blocks and after chunk waits, not before `done`.
    events = await collect(faux_with(faux_assistant_message("one")), abort_when=after("text_end"))
    assert types(events)[-1] == "done"


async def test_abort_from_another_task_mid_stream() -> None:
    faux = faux_with(faux_assistant_message(ALPHABET * 4), token_size=(1, 1))
    controller = AbortController()
    options = StreamOptions(signal=controller.signal)
    got_delta, resume = anyio.Event(), anyio.Event()
    events: list[AssistantMessageEvent] = []

    async def consume() -> None:
        async for event in faux.stream(first_model(faux), CONTEXT, options):
            events.append(event)
            if isinstance(event, TextDelta) and not got_delta.is_set():
                got_delta.set()
                await resume.wait()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await got_delta.wait()
            controller.abort()
            resume.set()
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert_aborted(events, [TextContent("abcd")])


# --- cancellation -------------------------------------------------------------------------------


async def test_cancel_scope_around_iteration_leaves_the_provider_usable() -> None:
    faux = faux_with(faux_assistant_message(ALPHABET * 4), faux_assistant_message("after"))
    seen: list[AssistantMessageEvent] = []
    stream = faux.stream(first_model(faux), CONTEXT, StreamOptions())
    assert isinstance(stream, AsyncIterator)
    with anyio.CancelScope() as scope:
        async for event in stream:
            seen.append(event)
            if isinstance(event, TextDelta):
                scope.cancel()
    assert scope.cancelled_caught
    assert types(seen) == ["start", "text_start", "text_delta"]
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()  # the generator finished with the cancellation
    events = await collect(faux)
    assert final_message(events).content == [TextContent("after")]
    assert (faux.call_count, faux.pending_response_count) == (2, 0)


async def test_abort_scope_around_iteration_as_the_agent_loop_does() -> None:
    faux = faux_with(faux_assistant_message(ALPHABET * 4))
    controller = AbortController()
    options = StreamOptions(signal=controller.signal)
    seen: list[AssistantMessageEvent] = []
    with controller.signal.scope() as scope:
        async for event in faux.stream(first_model(faux), CONTEXT, options):
            seen.append(event)
            if isinstance(event, TextDelta):
                controller.abort()
    assert scope.cancelled_caught
    assert types(seen) == ["start", "text_start", "text_delta"]


async def test_cancel_while_an_async_factory_waits() -> None:
    factory_waiting = anyio.Event()

    async def factory(*_: object) -> AssistantMessage:
        factory_waiting.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    faux = faux_with(factory, faux_assistant_message("next"))
    seen: list[AssistantMessageEvent] = []

    async def consume(scope: anyio.CancelScope) -> None:
        with scope:
            async for event in faux.stream(first_model(faux), CONTEXT, StreamOptions()):
                seen.append(event)

    scope = anyio.CancelScope()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume, scope)
            await factory_waiting.wait()
            scope.cancel()
    assert seen == []
    assert final_message(await collect(faux)).content == [TextContent("next")]


async def test_concurrent_calls_stream_independently() -> None:
    faux = faux_with(faux_assistant_message("first " * 10), faux_assistant_message("second " * 10))
    results: dict[int, list[AssistantMessageEvent]] = {}

    async def run(index: int, stream: AsyncIterator[AssistantMessageEvent]) -> None:
        results[index] = [event async for event in stream]

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for index in range(2):
                tg.start_soon(run, index, faux.stream(first_model(faux), CONTEXT, StreamOptions()))
    assert final_message(results[0]).content == [TextContent("first " * 10)]
    assert final_message(results[1]).content == [TextContent("second " * 10)]


# --- usage --------------------------------------------------------------------------------------

RICH_CONTEXT = Context(
    system_prompt="Be brief.",
    messages=[
        UserMessage([TextContent("look"), ImageContent("QUJDRA==", "image/png")]),
        AssistantMessage(
            [ThinkingContent("hm"), TextContent("ok"), ToolCall("c1", "add", {"a": 1})],
            "faux",
            "faux",
            "faux-1",
        ),
        ToolResultMessage("c1", "add", [TextContent("2"), TextContent("done")]),
    ],
    tools=[Tool("add", "Add.", {"type": "object"})],
)
# Upstream's serialization of RICH_CONTEXT, written out by hand. Its length, part by part:
# 16 + (2 + 9 + 1 + 19) + (2 + 12 + 1 + 2 + 1 + 11) + (2 + 14 + 2 + 5) + (2 + 6 + 68) = 175.
RICH_PROMPT = (
    "system:Be brief."
    '\ntool+:{"name":"add","description":"Add.","parameters":{"type":"object"}}'
    "\n\nuser:look\n[image:image/png:8]"
    '\n\nassistant:hm\nok\nadd:{"a":1}'
    "\n\ntoolResult:add\n2\ndone"
)


async def test_context_serialization_matches_upstream() -> None:
    assert serialize_context(RICH_CONTEXT) == RICH_PROMPT
    assert len(RICH_PROMPT) == 172
    assert serialize_context(Context()) == ""


async def test_usage_estimate() -> None:
    call = faux_tool_call("search", {"q": "cats"}, id="c")
    scripted = faux_assistant_message([faux_thinking("hmm"), faux_text("Here."), call], "toolUse")
    usage = final_message(await collect(faux_with(scripted), context=RICH_CONTEXT)).usage
    # input: ceil(172 / 4) = 43. output: 'hmm\nHere.\nsearch:{"q":"cats"}' is 3 + 1 + 5 + 1 + 19 = 29
    # characters -> 8 tokens.
    assert usage == Usage(input=43, output=8, total_tokens=51)
    assert usage.cost.total == 0


async def test_prompt_cache_simulation_per_session() -> None:
    faux = faux_with(*(faux_assistant_message(text) for text in ["ok", "fine", "yes", "no"]))
    first_context = Context(messages=[UserMessage("hello")])
    second_context = Context(
        messages=[
            UserMessage("hello"),
            AssistantMessage([TextContent("ok")], "faux", "faux", "faux-1"),
            UserMessage("more"),
        ]
    )
    session = StreamOptions(session_id="s1")

    async def usage(context: Context, options: StreamOptions) -> Usage:
        return final_message(await collect(faux, context=context, options=options)).usage

    # "user:hello" is 10 chars -> 3 tokens; a first prompt is both input and cache write.
    # Output "ok" -> 1 token. Total 3 + 1 + 0 + 3.
    assert await usage(first_context, session) == Usage(3, 1, 0, 3, 7)
    # "user:hello\n\nassistant:ok\n\nuser:more" is 35 chars -> 9 tokens. The first 10 chars are
    # the previous prompt: cache_read ceil(10/4) = 3, cache_write ceil(25/4) = 7, input 9 - 3 = 6.
    # Output "fine" -> 1 token. Total 6 + 1 + 3 + 7.
    assert await usage(second_context, session) == Usage(6, 1, 3, 7, 17)
    # Another session has nothing cached yet: input 9, cache_write 9, output "yes" -> 1.
    assert await usage(second_context, StreamOptions(session_id="s2")) == Usage(9, 1, 0, 9, 19)
    # cache_retention "none" turns the simulation off: input 9, output "no" -> 1.
    none = StreamOptions(session_id="s1", cache_retention="none")
    assert await usage(second_context, none) == Usage(9, 1, 0, 0, 10)


async def test_cache_falls_back_to_a_diverging_prompt() -> None:
    faux = faux_with(faux_assistant_message(""), faux_assistant_message(""))
    options = StreamOptions(session_id="s", cache_retention="long")
    await collect(faux, context=Context(messages=[UserMessage("abcdefgh")]), options=options)
    # Previous "user:abcdefgh" (13 chars), now "user:abcdXYZW" (13 chars): 9 shared chars.
    # cache_read ceil(9/4) = 3, cache_write ceil(4/4) = 1, input ceil(13/4) - 3 = 1.
    events = await collect(
        faux, context=Context(messages=[UserMessage("abcdXYZW")]), options=options
    )
    assert final_message(events).usage == Usage(1, 0, 3, 1, 5)


async def test_no_session_means_no_cache() -> None:
    faux = faux_with(faux_assistant_message("ok"), faux_assistant_message("ok"))
    for _ in range(2):
        usage = final_message(await collect(faux)).usage
        assert usage == Usage(2, 1, 0, 0, 3)  # "user:hi" -> 2 tokens, "ok" -> 1


# --- the registry -------------------------------------------------------------------------------


async def test_register_serves_stream_simple() -> None:
    faux = FauxProvider(api="faux-test-register")
    assert faux.register() is faux
    try:
        faux.set_responses([faux_assistant_message("via registry")])
        events = await simple_events(first_model(faux), StreamOptions())
        assert final_message(events).content == [TextContent("via registry")]
        assert faux.call_count == 1
    finally:
        faux.unregister()
    events = await simple_events(first_model(faux))
    assert (final_message(events).error_message or "").startswith(
        "No API provider registered for api: faux-test-register ("
    )
    assert faux.call_count == 1


async def test_unregister_leaves_a_newer_provider_alone() -> None:
    old = FauxProvider(api="faux-test-replace").register()
    new = FauxProvider(api="faux-test-replace").register()
    try:
        old.unregister()
        new.set_responses([faux_assistant_message("new one")])
        events = await simple_events(first_model(old))
        assert final_message(events).content == [TextContent("new one")]
    finally:
        new.unregister()
    register_provider("faux-test-replace", new.stream)
    new.unregister()
    events = await simple_events(first_model(new))
    assert final_message(events).stop_reason == "error"
