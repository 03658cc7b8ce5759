"""The Anthropic Messages provider: request mapping, stream mapping, failures.

Wire fixtures follow Anthropic's documented streaming format: named events ``message_start``,
``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``, ``message_stop``, ``ping``
and ``error``, with ``text_delta``, ``thinking_delta``, ``signature_delta`` and
``input_json_delta`` deltas.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import httpx
import pytest
from _replay_server import Reply, abort_after_first_text_delta, open_replay_server, sse_event
from _stream_checks import collect, final_message, kinds

from pi_core import (
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Model,
    ModelCost,
    StreamDone,
    StreamError,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
    stream_simple,
)
from pi_core import _http as http
from pi_core._registry import get_provider
from pi_core.providers import anthropic
from pi_core.testing import check_event_grammar

pytestmark = pytest.mark.anyio

MODEL = Model(
    "claude-test",
    api="anthropic-messages",
    provider="anthropic",
    base_url="https://llm.example",
    reasoning=True,
    input=("text", "image"),
    cost=ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75),
    max_tokens=64000,
)
CONTEXT = Context("Be brief.", [UserMessage("Hi")])
OPTIONS = StreamOptions(api_key="sk-ant-test", cache_retention="none")


# --- wire fixtures ------------------------------------------------------------------------------


def event(data: dict[str, Any]) -> bytes:
    """One named SSE event, its name equal to the data's ``type`` as the API sends it."""
    return sse_event(data, data["type"])


def message_start(input_tokens: int = 25, cache_read: int = 0, cache_write: int = 0) -> bytes:
    return event(
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-test-20250101",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        }
    )


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return event({"type": "content_block_start", "index": index, "content_block": block})


def block_delta(index: int, delta: dict[str, Any]) -> bytes:
    return event({"type": "content_block_delta", "index": index, "delta": delta})


def block_stop(index: int) -> bytes:
    return event({"type": "content_block_stop", "index": index})


def message_end(stop_reason: str, output_tokens: int) -> list[bytes]:
    """``message_delta`` with the stop reason and cumulative output, then ``message_stop``."""
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }
    return [event(delta), event({"type": "message_stop"})]


def text_block(index: int, *parts: str) -> list[bytes]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *[block_delta(index, {"type": "text_delta", "text": part}) for part in parts],
        block_stop(index),
    ]


def tool_block(index: int, call_id: str, name: str, *fragments: str) -> list[bytes]:
    return [
        block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
        *[
            block_delta(index, {"type": "input_json_delta", "partial_json": part})
            for part in fragments
        ],
        block_stop(index),
    ]


TEXT_BODY = [
    message_start(input_tokens=25, cache_read=100, cache_write=10),
    event({"type": "ping"}),
    *text_block(0, "Hel", "lo!"),
    *message_end("end_turn", 15),
]
THINKING_BLOCKS = [
    block_start(0, {"type": "thinking", "thinking": ""}),
    block_delta(0, {"type": "thinking_delta", "thinking": "Two "}),
    block_delta(0, {"type": "thinking_delta", "thinking": "lookups."}),
    block_delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
    block_stop(0),
    block_start(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}),
    block_stop(1),
]
TOOL_BLOCKS = [
    *tool_block(2, "toolu_a", "get_weather", "", '{"city": "Pa', 'ris", "days": 3', "}"),
    *tool_block(3, "toolu_b", "get_time", '{"tz": "UTC"}'),
]
FULL_BODY = [message_start(), *THINKING_BLOCKS, *TOOL_BLOCKS, *message_end("tool_use", 40)]


def sse_response(lines: list[bytes]) -> httpx.Response:
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=b"".join(lines)
    )


async def run(
    lines: list[bytes],
    context: Context = CONTEXT,
    options: StreamOptions = OPTIONS,
    model: Model = MODEL,
) -> tuple[list[AssistantMessageEvent], httpx.Request]:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return sse_response(lines)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        events = await collect(anthropic.stream_anthropic(model, context, options, client=client))
    assert len(seen) <= 1
    return events, seen[0] if seen else httpx.Request("GET", "http://unsent")


def sent(request: httpx.Request) -> Any:
    return json.loads(request.content)


# --- the request --------------------------------------------------------------------------------


async def test_request_url_headers_and_body() -> None:
    model = Model(
        "claude-test",
        api="anthropic-messages",
        provider="anthropic",
        headers={"X-Model": "m"},
        max_tokens=8192,
    )
    options = StreamOptions(
        api_key="sk-ant-test",
        temperature=0.5,
        headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
        metadata={"user_id": "u-1"},
    )
    tool = Tool(
        "echo", "Echo it.", {"properties": {"text": {"type": "string"}}, "required": ["text"]}
    )
    _, request = await run(
        TEXT_BODY, Context("Be brief.", [UserMessage("Hi")], [tool]), options, model
    )
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    headers = request.headers
    assert (headers["x-api-key"], headers["anthropic-version"]) == ("sk-ant-test", "2023-06-01")
    assert (headers["x-model"], headers["anthropic-beta"]) == (
        "m",
        "interleaved-thinking-2025-05-14",
    )
    assert "authorization" not in headers
    cache = {"type": "ephemeral"}
    assert sent(request) == {
        "model": "claude-test",
        "max_tokens": 8192,
        "stream": True,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": cache}]}
        ],
        "system": [{"type": "text", "text": "Be brief.", "cache_control": cache}],
        "tools": [
            {
                "name": "echo",
                "description": "Echo it.",
                "eager_input_streaming": True,
                "input_schema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
                "cache_control": cache,
            }
        ],
        "temperature": 0.5,
        "metadata": {"user_id": "u-1"},
    }


async def test_base_url_ending_in_v1() -> None:
    model = Model("claude-test", api="anthropic-messages", base_url="https://proxy.example/v1/")
    _, request = await run(TEXT_BODY, model=model)
    assert str(request.url) == "https://proxy.example/v1/messages"
    assert sent(request)["max_tokens"] == 4096


@pytest.mark.parametrize(
    ("level", "budget"),
    [("minimal", 1024), ("low", 2048), ("medium", 8192), ("high", 16384), ("xhigh", 16384)],
)
async def test_thinking_budget_per_level(level: ThinkingLevel, budget: int) -> None:
    # The budget always leaves 1024 tokens for the answer.
    options = StreamOptions(api_key="k", reasoning=level, max_tokens=1024, temperature=0.7)
    _, request = await run(TEXT_BODY, options=options)
    body = sent(request)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
    assert body["max_tokens"] == 1024 + budget
    assert "temperature" not in body  # the API refuses a temperature with thinking


def test_thinking_budget_overrides_and_caps() -> None:
    options = StreamOptions(reasoning="high", thinking_budgets={"high": 5000}, max_tokens=2000)
    assert anthropic.thinking_settings(MODEL, options) == (7000, 5000)
    small = Model("c", reasoning=True, max_tokens=4000)
    assert anthropic.thinking_settings(small, StreamOptions(reasoning="medium")) == (4000, 2976)
    plain = Model("c", reasoning=False, max_tokens=50000)
    # Without max_tokens a reply may take the model's whole output limit.
    assert anthropic.thinking_settings(plain, StreamOptions(reasoning="high")) == (50000, None)
    assert anthropic.thinking_settings(MODEL, StreamOptions(reasoning="off")) == (64000, None)
    # ... as far as the context window leaves room for it after the input and a margin.
    windowed = attrs.evolve(MODEL, context_window=70000)
    context = Context(messages=[UserMessage("x" * 35000)])  # 10 000 tokens, as estimated
    settings = anthropic.thinking_settings(windowed, StreamOptions(), context)
    assert settings == (70000 - 10000 - 4096, None)


async def test_transcript_conversion() -> None:
    image = ImageContent("aGk=", "image/png")
    own = AssistantMessage(
        [
            ThinkingContent("Weather first.", "sig-1"),
            ThinkingContent("[Reasoning redacted]", "opaque", redacted=True),
            TextContent("Let me look."),
            ToolCall("call|1", "get_weather", {"city": "Paris"}),
            ToolCall("call_2", "get_time", {}),
        ],
        "anthropic-messages",
        "anthropic",
        "claude-test",
        stop_reason="toolUse",
    )
    other = AssistantMessage(
        [
            ThinkingContent("Their thoughts.", "theirs"),
            ThinkingContent("x", "y", redacted=True),
            TextContent("Ok."),
        ],
        "openai-completions",
        "openai",
        "gpt-test",
    )
    context = Context(
        None,
        [
            UserMessage([TextContent("What is this?"), image]),
            own,
            ToolResultMessage("call|1", "get_weather", [TextContent("Sunny"), image]),
            UserMessage("Thanks"),
            other,
            UserMessage("Bye"),
        ],
    )
    options = StreamOptions(api_key="k")  # caching on by default
    _, request = await run(TEXT_BODY, context, options)
    image_block = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
    }
    cache = {"type": "ephemeral"}
    assert sent(request)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image_block]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Weather first.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [{"type": "text", "text": "Sunny"}, image_block],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "No result provided",
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": "Thanks"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Ok."}],  # another model's thinking is dropped
        },
        {"role": "user", "content": [{"type": "text", "text": "Bye", "cache_control": cache}]},
    ]


async def test_failed_assistant_messages_and_their_results_are_not_sent() -> None:
    failed = AssistantMessage(
        [ToolCall("toolu_x", "t", {})],
        "anthropic-messages",
        "anthropic",
        "claude-test",
        stop_reason="error",
        error_message="boom",
    )
    orphan = ToolResultMessage("toolu_x", "t", [TextContent("late")])
    context = Context(
        None, [UserMessage("Hi"), failed, orphan, UserMessage("Again"), UserMessage(" ")]
    )
    _, request = await run(TEXT_BODY, context)
    assert sent(request)["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Again"},
    ]


# --- the response -------------------------------------------------------------------------------


async def test_text_and_usage_with_cache() -> None:
    events, _ = await run(TEXT_BODY)
    assert kinds(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    message = final_message(events)
    assert message.content == [TextContent("Hello!")]
    assert (message.response_id, message.response_model) == ("msg_01", "claude-test-20250101")
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (25, 15, 100, 10)
    assert usage.total_tokens == 150
    assert usage.cost.total == pytest.approx((25 * 3.0 + 15 * 15.0 + 100 * 0.3 + 10 * 3.75) / 1e6)


async def test_thinking_signatures_redaction_and_parallel_tool_calls() -> None:
    seen_arguments: list[dict[str, Any]] = []

    def snapshot(event: AssistantMessageEvent) -> None:
        if isinstance(event, ToolCallDelta):
            call = event.partial.content[event.content_index]
            assert isinstance(call, ToolCall)
            seen_arguments.append(dict(call.arguments))

    async with httpx.AsyncClient(
        transport=httpx.MockTransport(lambda _: sse_response(FULL_BODY))
    ) as client:
        events = await collect(
            anthropic.stream_anthropic(MODEL, CONTEXT, OPTIONS, client=client), snapshot
        )
    assert kinds(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "thinking_start",
        "thinking_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert seen_arguments == [
        {"city": "Pa"},
        {"city": "Paris", "days": 3},
        {"city": "Paris", "days": 3},
        {"tz": "UTC"},
    ]
    message = final_message(events)
    assert message.stop_reason == "toolUse"
    assert message.content == [
        ThinkingContent("Two lookups.", "EqQBCgIYAhIM"),
        ThinkingContent("[Reasoning redacted]", "EmwKAhgBEgy3va", redacted=True),
        ToolCall("toolu_a", "get_weather", {"city": "Paris", "days": 3}),
        ToolCall("toolu_b", "get_time", {"tz": "UTC"}),
    ]
    assert (message.usage.input, message.usage.output) == (25, 40)


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "toolUse"),
    ],
)
async def test_stop_reasons(wire: str, reason: str) -> None:
    events, _ = await run([message_start(), *text_block(0, "x"), *message_end(wire, 2)])
    assert isinstance(events[-1], StreamDone)
    assert events[-1].reason == reason


async def test_refusal_is_an_error() -> None:
    events, _ = await run([message_start(), *text_block(0, "I can"), *message_end("refusal", 2)])
    assert isinstance(events[-1], StreamError)
    assert events[-1].error.error_message == "The model refused to complete the request"
    assert events[-1].error.content == [TextContent("I can")]


async def test_a_refusal_with_an_explanation_and_other_failed_stops() -> None:
    explained = event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "refusal", "stop_details": {"explanation": "Not that."}},
            "usage": {"output_tokens": 1},
        }
    )
    stop = event({"type": "message_stop"})
    events, _ = await run([message_start(), *text_block(0, "x"), explained, stop])
    assert final_message(events).error_message == "Not that."
    for reason, text in [
        ("sensitive", "Provider stopped with: sensitive"),
        ("brand_new", "Unhandled stop reason: brand_new"),
    ]:
        events, _ = await run([message_start(), *text_block(0, "x"), *message_end(reason, 2)])
        assert (final_message(events).stop_reason, final_message(events).error_message) == (
            "error",
            text,
        )


async def test_error_event_mid_stream() -> None:
    error = event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    events, _ = await run(
        [
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            block_delta(0, {"type": "text_delta", "text": "Hi"}),
            error,
        ]
    )
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    assert final_message(events).error_message == "overloaded_error: Overloaded"
    assert final_message(events).content == [TextContent("Hi")]


async def test_stream_without_an_end_is_an_error() -> None:
    events, _ = await run([message_start(), *text_block(0, "Hi")])
    assert final_message(events).error_message == "Anthropic stream ended before message_stop"
    unreasoned = [message_start(), *text_block(0, "Hi"), event({"type": "message_stop"})]
    events, _ = await run(unreasoned)
    assert final_message(events).error_message == "Anthropic stream ended without a stop reason"


async def test_api_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    _, request = await run(TEXT_BODY, options=StreamOptions())
    assert request.headers["x-api-key"] == "sk-ant-env"


async def test_register_serves_stream_simple() -> None:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return sse_response(TEXT_BODY)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        anthropic.register(client=client)
        try:
            stream = stream_simple(MODEL, CONTEXT, OPTIONS)
            assert not isinstance(stream, Awaitable)
            events = await collect(stream)
        finally:
            anthropic.unregister()
    assert final_message(events).content == [TextContent("Hello!")]
    assert seen[0].headers["x-api-key"] == "sk-ant-test"  # the request went through ``client``
    assert get_provider(anthropic.API) is None  # unregistered: the built-in provider serves it


# --- against a real HTTP server ---------------------------------------------------------------


def served_model(base_url: str) -> Model:
    return Model("claude-test", api="anthropic-messages", provider="anthropic", base_url=base_url)


async def stream_from(replies: list[Reply], backend: str) -> list[AssistantMessageEvent]:
    async with open_replay_server(replies, backend) as server:
        return await collect(
            anthropic.stream_anthropic(served_model(server.base_url), CONTEXT, OPTIONS)
        )


async def test_served_thinking_text_and_parallel_tool_calls(anyio_backend: str) -> None:
    lines = [
        message_start(),
        *THINKING_BLOCKS,
        *text_block(4, "Checking."),
        *TOOL_BLOCKS,
        *message_end("tool_use", 40),
    ]
    # the server's block indexes need not match ours: a text block sent as index 4 comes third
    async with open_replay_server([Reply(chunks=lines)], anyio_backend) as server:
        events = await collect(
            anthropic.stream_anthropic(served_model(server.base_url), CONTEXT, OPTIONS)
        )
        request = server.requests[0]
    assert (request.path, request.headers["x-api-key"]) == ("/v1/messages", "sk-ant-test")
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body["messages"] == [{"role": "user", "content": "Hi"}]
    message = final_message(events)
    assert [block.type for block in message.content] == [
        "thinking",
        "thinking",
        "text",
        "toolCall",
        "toolCall",
    ]
    assert message.content[3] == ToolCall("toolu_a", "get_weather", {"city": "Paris", "days": 3})
    assert (message.stop_reason, message.usage.output) == ("toolUse", 40)


@pytest.mark.parametrize(
    ("status", "error_type", "text", "expected"),
    [
        (
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
            "429 Too Many Requests: ",
        ),
        (500, "api_error", "Internal server error", "500 Internal Server Error: "),
    ],
)
async def test_served_error_status(
    anyio_backend: str,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    error_type: str,
    text: str,
    expected: str,
) -> None:
    payload = {"type": "error", "error": {"type": error_type, "message": text}}
    reply = Reply(status, [json.dumps(payload).encode()], content_type="application/json")
    monkeypatch.setattr(http, "_sleep", lambda delay: anyio.lowlevel.checkpoint())
    events = await stream_from([reply] * 3, anyio_backend)  # the first try and two retries
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == expected + text


async def test_served_error_mid_stream(anyio_backend: str) -> None:
    error = event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    lines = [
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Hi"}),
        error,
    ]
    events = await stream_from([Reply(chunks=lines, ending="hold")], anyio_backend)
    assert final_message(events).error_message == "overloaded_error: Overloaded"
    assert final_message(events).content == [TextContent("Hi")]


async def test_served_connection_dropped_mid_body(anyio_backend: str) -> None:
    events = await stream_from([Reply(chunks=TEXT_BODY[:4], ending="drop")], anyio_backend)
    message = final_message(events)
    # Never the HTTP stack's own text: what failed, and where.
    assert re.fullmatch(
        r"Connection error \(http://127\.0\.0\.1:\d+/v1/messages\): the server closed the connection or broke the HTTP protocol",
        message.error_message or "",
    )
    assert message.content == [TextContent("Hel")]


async def test_served_abort_mid_stream_disconnects(anyio_backend: str) -> None:
    def start(url: str, signal: AbortSignal) -> AsyncIterator[AssistantMessageEvent]:
        return anthropic.stream_anthropic(
            served_model(url), CONTEXT, StreamOptions(api_key="k", signal=signal)
        )

    events = await abort_after_first_text_delta(TEXT_BODY[:4], anyio_backend, start)
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    message = final_message(events)
    assert (message.stop_reason, message.error_message) == ("aborted", "Request was aborted")
    assert message.content == [TextContent("Hel")]
    assert message.usage.input == 25  # message_start's usage survives the abort


async def test_agent_loop_round_trip_keeps_thinking_signatures(anyio_backend: str) -> None:
    async def add(tool_call_id: str, params: Any, signal: AbortSignal, on_update: object) -> str:
        return str(params["a"] + params["b"])

    adder = AgentTool("add", "Add two numbers.", ADD_SCHEMA, add)
    first = [
        message_start(),
        *THINKING_BLOCKS[:5],
        *tool_block(1, "toolu_1", "add", '{"a": 2, ', '"b": 3}'),
        *message_end("tool_use", 30),
    ]
    second = [message_start(), *text_block(0, "It is 5."), *message_end("end_turn", 5)]
    events: list[AgentEvent] = []
    async with open_replay_server(
        [Reply(chunks=first), Reply(chunks=second)], anyio_backend
    ) as server:
        options = StreamOptions(api_key="k", reasoning="low", cache_retention="none")
        model = attrs.evolve(MODEL, base_url=server.base_url)
        config = AgentLoopConfig(model, stream_fn=anthropic.stream_anthropic, options=options)
        with anyio.fail_after(10):
            new = await run_agent_loop(
                [UserMessage("2+3?")], AgentContext("", [], [adder]), config, events.append
            )
        follow_up = server.requests[1].body
    check_event_grammar(events)
    roles = ["system", "user", "assistant", "toolResult", "assistant"]  # the tools declared first
    assert [message.role for message in new] == roles
    assert follow_up["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2048,
        "display": "summarized",
    }
    assert follow_up["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Two lookups.", "signature": "EqQBCgIYAhIM"},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"}],
        },
    ]
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert final.content == [TextContent("It is 5.")]


ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


async def test_signature_only_thinking_is_sent_back() -> None:
    # With thinking display "omitted" the API streams a signature and no thinking text.
    own = AssistantMessage(
        [ThinkingContent("", "sig-only"), ToolCall("toolu_1", "t", {})],
        "anthropic-messages",
        "anthropic",
        "claude-test",
        stop_reason="toolUse",
    )
    context = Context(
        None, [UserMessage("Hi"), own, ToolResultMessage("toolu_1", "t", [TextContent("ok")])]
    )
    _, request = await run(TEXT_BODY, context)
    assert sent(request)["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "",
        "signature": "sig-only",
    }
