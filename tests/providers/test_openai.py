"""The OpenAI-compatible Chat Completions provider: request mapping, stream mapping, failures.

Wire fixtures follow OpenAI's documented streaming format (``chat.completion.chunk`` objects,
``data: [DONE]``), plus the ``reasoning_content`` / ``reasoning`` deltas of vLLM, DeepSeek and
llama.cpp and the error chunks of OpenRouter.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import httpx
import pytest
from _replay_server import Reply, abort_after_first_text_delta, open_replay_server, sse_event
from _stream_checks import collect, final_message, kinds

from pi_core import (
    AbortController,
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
    ModelCompat,
    ModelCost,
    ProviderError,
    StreamDone,
    StreamError,
    StreamOptions,
    TextContent,
    TextDelta,
    ThinkingContent,
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
from pi_core.lowlevel import installed_version
from pi_core.models import get_model
from pi_core.providers import openai
from pi_core.testing import check_event_grammar

pytestmark = pytest.mark.anyio

MODEL = Model(
    "gpt-test",
    api="openai-completions",
    provider="openai",
    base_url="https://llm.example/v1",
    reasoning=True,
    input=("text", "image"),
    cost=ModelCost(input=1.0, output=2.0, cache_read=0.5),
)
CONTEXT = Context("Be brief.", [UserMessage("Hi")])
OPTIONS = StreamOptions(api_key="sk-test")


# --- wire fixtures ------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test-2025",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
    }


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    """The last chunk under ``stream_options.include_usage``: no choices, only usage."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-test-2025",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }


def tool_delta(
    index: int, *, id: str | None = None, name: str | None = None, args: str = ""
) -> dict[str, Any]:
    """A ``delta.tool_calls`` entry; only the first of a call carries id and name."""
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        call.update(id=id, type="function")
        call["function"]["name"] = name
    return {"tool_calls": [call]}


def body(*chunks: dict[str, Any], done: bool = True) -> list[bytes]:
    """SSE lines for ``chunks``, then ``data: [DONE]``."""
    lines = [sse_event(item) for item in chunks]
    return [*lines, sse_event("[DONE]")] if done else lines


TEXT_BODY = body(
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hel"}),
    chunk({"content": "lo!"}),
    chunk(finish="stop"),
    usage_chunk(prompt=10, completion=5, cached=4),
)
TOOL_BODY = body(
    chunk({"role": "assistant", "content": None}),
    chunk(tool_delta(0, id="call_a", name="get_weather")),
    chunk(tool_delta(0, args='{"city": "Pa')),
    chunk(tool_delta(0, args='ris", "days": 3')),
    chunk(tool_delta(0, args="}")),
    chunk(tool_delta(1, id="call_b", name="get_time", args='{"tz": "UTC"}')),
    chunk(finish="tool_calls"),
)

Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


def sse_response(lines: list[bytes], status: int = 200) -> httpx.Response:
    return httpx.Response(
        status, headers={"content-type": "text/event-stream"}, content=b"".join(lines)
    )


def mock_client(lines: list[bytes], seen: list[httpx.Request] | None = None) -> httpx.AsyncClient:
    """A client whose every request is answered with ``lines``; requests land in ``seen``."""

    async def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return sse_response(lines)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def run(
    lines: list[bytes],
    context: Context = CONTEXT,
    options: StreamOptions = OPTIONS,
    model: Model = MODEL,
) -> tuple[list[AssistantMessageEvent], httpx.Request]:
    seen: list[httpx.Request] = []
    async with mock_client(lines, seen) as client:
        events = await collect(openai.stream_openai(model, context, options, client=client))
    assert len(seen) == 1
    return events, seen[0]


# --- the request --------------------------------------------------------------------------------


async def test_request_url_headers_and_body() -> None:
    model = Model(
        "gpt-test",
        api="openai-completions",
        provider="custom",  # a server known by neither its name nor its address
        base_url="https://llm.example/v1/",
        reasoning=True,
        headers={"X-Model": "m"},
    )
    options = StreamOptions(
        api_key="sk-test",
        reasoning="xhigh",
        temperature=0.2,
        max_tokens=256,
        headers={"X-Call": "c"},
    )
    context = Context(
        "Be brief.", [UserMessage("Hi")], [Tool("echo", "Echo it.", {"type": "object"})]
    )
    _, request = await run(TEXT_BODY, context, options, model)
    assert str(request.url) == "https://llm.example/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    # The installed version, by the distribution's own name (never "unknown" once installed).
    assert request.headers["user-agent"].startswith(f"pi_core/{installed_version()} (")
    assert installed_version() != "unknown"
    assert (request.headers["x-model"], request.headers["x-call"]) == ("m", "c")
    assert json.loads(request.content) == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 256,
        "temperature": 0.2,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "echo",
                    "description": "Echo it.",
                    "parameters": {"type": "object"},
                },
            }
        ],
        "reasoning_effort": "high",
    }


async def test_official_api_gets_max_completion_tokens_and_default_base_url() -> None:
    model = Model("gpt-test", api="openai-completions", provider="openai")
    _, request = await run(TEXT_BODY, options=StreamOptions(api_key="k", max_tokens=9), model=model)
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    sent = json.loads(request.content)
    assert sent["max_completion_tokens"] == 9
    assert "max_tokens" not in sent


async def test_no_reasoning_effort_for_a_model_without_reasoning() -> None:
    model = Model("gpt-test", api="openai-completions", base_url="http://x/v1")
    _, request = await run(
        TEXT_BODY, options=StreamOptions(api_key="k", reasoning="high"), model=model
    )
    assert "reasoning_effort" not in json.loads(request.content)


async def test_transcript_conversion() -> None:
    image = ImageContent("aGk=", "image/png")
    assistant = AssistantMessage(
        [
            ThinkingContent("Weather first.", "reasoning_content"),
            TextContent("Let me look."),
            ToolCall("call_1", "get_weather", {"city": "Paris"}),
            ToolCall("call_2", "get_time", {}),
        ],
        "openai-completions",
        "openai",
        "gpt-test",
        stop_reason="toolUse",
    )
    context = Context(
        None,
        [
            UserMessage([TextContent("What is this?"), image]),
            assistant,
            ToolResultMessage("call_1", "get_weather", [TextContent("Sunny"), image]),
            UserMessage("Thanks"),
        ],
    )
    _, request = await run(TEXT_BODY, context)
    assert json.loads(request.content)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
            "reasoning_content": "Weather first.",
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "No result provided"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
        {"role": "user", "content": "Thanks"},
    ]


async def test_images_are_replaced_for_a_text_only_model() -> None:
    model = Model("gpt-test", api="openai-completions", base_url="http://x/v1")
    context = Context(None, [UserMessage([TextContent("Look"), ImageContent("aGk=", "image/png")])])
    _, request = await run(TEXT_BODY, context, model=model)
    parts = json.loads(request.content)["messages"][0]["content"]
    assert parts[1] == {
        "type": "text",
        "text": "(image omitted: this model does not accept images)",
    }


async def test_aborted_assistant_messages_are_not_sent() -> None:
    aborted = AssistantMessage(
        [TextContent("Half"), ToolCall("call_x", "t", {})],
        "openai-completions",
        "openai",
        "gpt-test",
        stop_reason="aborted",
        error_message="Request was aborted",
    )
    context = Context(None, [UserMessage("Hi"), aborted, UserMessage("Again")])
    _, request = await run(TEXT_BODY, context)
    assert json.loads(request.content)["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Again"},
    ]


# --- the response -------------------------------------------------------------------------------


async def test_text_usage_and_metadata() -> None:
    events, _ = await run(TEXT_BODY)
    assert kinds(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [event.delta for event in events if isinstance(event, TextDelta)] == ["Hel", "lo!"]
    message = final_message(events)
    assert message.content == [TextContent("Hello!")]
    assert (message.stop_reason, message.response_id) == ("stop", "chatcmpl-1")
    assert message.response_model == "gpt-test-2025"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.total_tokens) == (6, 5, 4, 15)
    assert usage.cost.total == pytest.approx((6 * 1.0 + 5 * 2.0 + 4 * 0.5) / 1e6)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_become_thinking(field: str) -> None:
    lines = body(
        chunk({field: "Let me "}),
        chunk({field: "think."}),
        chunk({"content": "42"}),
        chunk(finish="stop"),
    )
    events, _ = await run(lines)
    assert kinds(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    assert final_message(events).content == [
        ThinkingContent("Let me think.", field),
        TextContent("42"),
    ]


async def test_tool_calls_stream_partial_arguments() -> None:
    seen_arguments: list[dict[str, Any]] = []

    def snapshot(event: AssistantMessageEvent) -> None:
        if isinstance(event, ToolCallDelta):
            call = event.partial.content[event.content_index]
            assert isinstance(call, ToolCall)
            seen_arguments.append(dict(call.arguments))

    async with mock_client(TOOL_BODY) as client:
        stream = openai.stream_openai(MODEL, CONTEXT, OPTIONS, client=client)
        events = await collect(stream, snapshot)
    assert kinds(events) == [
        "start",
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
        ToolCall("call_a", "get_weather", {"city": "Paris", "days": 3}),
        ToolCall("call_b", "get_time", {"tz": "UTC"}),
    ]


async def test_truncated_arguments_are_none_with_an_error() -> None:
    cut = '{"n": 1, "cmd": "rm -rf /tm'
    lines = body(chunk(tool_delta(0, id="c", name="run", args=cut)), chunk(finish="length"))
    events, _ = await run(lines)
    assert isinstance(events[-1], StreamDone)
    assert events[-1].reason == "length"
    (call,) = final_message(events).content
    assert isinstance(call, ToolCall) and call.arguments == {}  # no cut command reaches a tool
    assert call.arguments_error is not None
    assert call.arguments_error.endswith(f"\n\nReceived arguments:\n{cut}")


async def test_arguments_that_are_no_object_are_an_error() -> None:
    for text, reason in [("[1, 2]", "Tool arguments must be a JSON object"), ('{"v":x y}', "")]:
        lines = body(
            chunk(tool_delta(0, id="c", name="run", args=text)), chunk(finish="tool_calls")
        )
        (call,) = final_message((await run(lines))[0]).content
        assert isinstance(call, ToolCall) and call.arguments == {}
        assert call.arguments_error is not None and call.arguments_error.startswith(reason)
        assert call.arguments_error.endswith(f"Received arguments:\n{text}")


async def test_content_filter_is_an_error() -> None:
    events, _ = await run(body(chunk({"content": "I"}), chunk(finish="content_filter")))
    assert isinstance(events[-1], StreamError)
    assert events[-1].reason == "error"
    assert "content_filter" in (events[-1].error.error_message or "")
    assert events[-1].error.content == [TextContent("I")]


async def test_api_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    _, request = await run(TEXT_BODY, options=StreamOptions())
    assert request.headers["authorization"] == "Bearer sk-env"


async def test_a_catalogue_model_of_another_provider_reads_its_own_key_never_openais(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    groq = get_model("groq/llama-3.3-70b-versatile")
    assert groq.api == "openai-completions"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(ProviderError, match=r"^No API key for provider 'groq': .* GROQ_API_KEY$"):
        await run(TEXT_BODY, options=StreamOptions(), model=groq)
    monkeypatch.setenv("GROQ_API_KEY", "gsk-groq")
    _, request = await run(TEXT_BODY, options=StreamOptions(), model=groq)
    assert request.headers["authorization"] == "Bearer gsk-groq"
    # A model described by hand keeps the api's own variable.
    local = Model("llama3", api="openai-completions", provider="my-server")
    _, request = await run(TEXT_BODY, options=StreamOptions(), model=local)
    assert request.headers["authorization"] == "Bearer sk-openai"


async def test_already_aborted_signal_sends_nothing() -> None:
    controller = AbortController()
    controller.abort()
    events, seen = await _run_unanswered(StreamOptions(api_key="k", signal=controller.signal))
    assert kinds(events) == ["error"]
    assert (final_message(events).stop_reason, final_message(events).error_message) == (
        "aborted",
        "Request was aborted",
    )
    assert seen == []


async def _run_unanswered(
    options: StreamOptions,
) -> tuple[list[AssistantMessageEvent], list[httpx.Request]]:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return sse_response(TEXT_BODY)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        events = await collect(openai.stream_openai(MODEL, CONTEXT, options, client=client))
    return events, seen


async def test_malformed_data_keeps_the_partial_content() -> None:
    events, _ = await run([sse_event(chunk({"content": "Hi"})), b"data: {not json\n\n"])
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    message = final_message(events)
    assert message.error_message is not None
    assert message.error_message.startswith("Malformed stream data")
    assert message.content == [TextContent("Hi")]


async def test_stream_without_an_end_is_an_error() -> None:
    events, _ = await run(body(chunk({"content": "Hi"}), done=False))
    assert final_message(events).error_message == "Stream ended without finish_reason"
    # [DONE] without a finish_reason is no better ...
    events, _ = await run(body(chunk({"content": "Hi"})))
    assert final_message(events).error_message == "Stream ended without finish_reason"
    # ... unless the model's server is known to send none.
    silent = attrs.evolve(MODEL, compat=ModelCompat(supports_finish_reason=False))
    events, _ = await run(body(chunk({"content": "Hi"})), model=silent)
    assert (final_message(events).stop_reason, kinds(events)[-1]) == ("stop", "done")


async def test_error_chunk_mid_stream() -> None:
    error = {"error": {"message": "Upstream overloaded", "code": 502}}
    events, _ = await run([sse_event(chunk({"content": "Hi"})), sse_event(error)])
    assert final_message(events).error_message == "Upstream overloaded"
    assert final_message(events).content == [TextContent("Hi")]


async def test_http_error_status_reads_the_message() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "Incorrect API key provided"}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        events = await collect(openai.stream_openai(MODEL, CONTEXT, OPTIONS, client=client))
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == "401 Unauthorized: Incorrect API key provided"


async def test_json_instead_of_a_stream() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"error": "model not loaded"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        events = await collect(openai.stream_openai(MODEL, CONTEXT, OPTIONS, client=client))
    assert final_message(events).error_message == "model not loaded"


async def test_timeout_bounds_the_whole_request() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    options = StreamOptions(api_key="k", timeout=0.05)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        events = await collect(openai.stream_openai(MODEL, CONTEXT, options, client=client))
    assert final_message(events).error_message == "Request timed out after 0.05 s"


async def test_register_serves_stream_simple() -> None:
    async with mock_client(TEXT_BODY) as client:
        openai.register(client=client)
        try:
            stream = stream_simple(MODEL, CONTEXT, OPTIONS)
            assert not isinstance(stream, Awaitable)
            events = await collect(stream)
        finally:
            openai.unregister()
    assert final_message(events).content == [TextContent("Hello!")]
    assert get_provider(openai.API) is None  # unregistered: the built-in provider serves it


# --- against a real HTTP server ---------------------------------------------------------------


def served_model(base_url: str) -> Model:
    return Model("gpt-test", api="openai-completions", provider="openai", base_url=f"{base_url}/v1")


async def stream_from(
    replies: list[Reply], backend: str, options: StreamOptions = OPTIONS
) -> list[AssistantMessageEvent]:
    async with open_replay_server(replies, backend) as server:
        return await collect(openai.stream_openai(served_model(server.base_url), CONTEXT, options))


async def test_served_text_thinking_and_parallel_tool_calls(anyio_backend: str) -> None:
    lines = body(
        chunk({"reasoning_content": "Two lookups."}),
        chunk({"content": "Checking."}),
        *[json.loads(line[len(b"data: ") :]) for line in TOOL_BODY[1:-2]],
        chunk(finish="tool_calls"),
        usage_chunk(prompt=20, completion=7),
    )
    async with open_replay_server([Reply(chunks=lines)], anyio_backend) as server:
        events = await collect(
            openai.stream_openai(served_model(server.base_url), CONTEXT, OPTIONS)
        )
        request = server.requests[0]
    assert (request.path, request.headers["authorization"]) == (
        "/v1/chat/completions",
        "Bearer sk-test",
    )
    assert request.body["messages"][-1] == {"role": "user", "content": "Hi"}
    message = final_message(events)
    assert message.content == [
        ThinkingContent("Two lookups.", "reasoning_content"),
        TextContent("Checking."),
        ToolCall("call_a", "get_weather", {"city": "Paris", "days": 3}),
        ToolCall("call_b", "get_time", {"tz": "UTC"}),
    ]
    assert (message.stop_reason, message.usage.input, message.usage.output) == ("toolUse", 20, 7)


@pytest.mark.parametrize(
    ("status", "payload", "expected"),
    [
        (
            429,
            {"error": {"message": "Rate limit reached for requests", "type": "requests"}},
            "429 Too Many Requests: Rate limit reached for requests",
        ),
        (
            500,
            {"error": {"message": "The server had an error"}},
            "500 Internal Server Error: The server had an error",
        ),
    ],
)
async def test_served_error_status(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, status: int, payload: object, expected: str
) -> None:
    reply = Reply(status, [json.dumps(payload).encode()], content_type="application/json")
    monkeypatch.setattr(http, "_sleep", lambda delay: anyio.lowlevel.checkpoint())
    events = await stream_from([reply] * 3, anyio_backend)  # the first try and two retries
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == expected


async def test_served_error_mid_stream(anyio_backend: str) -> None:
    lines = [
        sse_event(chunk({"content": "Par"})),
        sse_event({"error": {"message": "Provider returned error", "code": 500}}),
    ]
    events = await stream_from([Reply(chunks=lines, ending="hold")], anyio_backend)
    assert final_message(events).error_message == "Provider returned error"
    assert final_message(events).content == [TextContent("Par")]


async def test_served_connection_dropped_mid_body(anyio_backend: str) -> None:
    events = await stream_from([Reply(chunks=TEXT_BODY[:2], ending="drop")], anyio_backend)
    message = final_message(events)
    assert message.stop_reason == "error"
    # Never the HTTP stack's own text: what failed, and where.
    assert re.fullmatch(
        r"Connection error \(http://127\.0\.0\.1:\d+/v1/chat/completions\): the server closed the connection or broke the HTTP protocol",
        message.error_message or "",
    )
    assert message.content == [TextContent("Hel")]


async def test_served_abort_mid_stream_disconnects(anyio_backend: str) -> None:
    def start(url: str, signal: AbortSignal) -> AsyncIterator[AssistantMessageEvent]:
        return openai.stream_openai(
            served_model(url), CONTEXT, StreamOptions(api_key="k", signal=signal)
        )

    events = await abort_after_first_text_delta(TEXT_BODY[:2], anyio_backend, start)
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    message = final_message(events)
    assert (message.stop_reason, message.error_message) == ("aborted", "Request was aborted")
    assert message.content == [TextContent("Hel")]


async def test_agent_loop_round_trip_through_a_served_model(anyio_backend: str) -> None:
    async def add(tool_call_id: str, params: Any, signal: AbortSignal, on_update: object) -> str:
        return str(params["a"] + params["b"])

    adder = AgentTool("add", "Add two numbers.", ADD_SCHEMA, add)
    first = body(
        chunk(tool_delta(0, id="call_1", name="add", args='{"a": 2, "b": 3}')),
        chunk(finish="tool_calls"),
    )
    second = body(chunk({"content": "It is 5."}), chunk(finish="stop"))
    events: list[AgentEvent] = []
    async with open_replay_server(
        [Reply(chunks=first), Reply(chunks=second)], anyio_backend
    ) as server:
        config = AgentLoopConfig(
            served_model(server.base_url), stream_fn=openai.stream_openai, options=OPTIONS
        )
        with anyio.fail_after(10):
            new = await run_agent_loop(
                [UserMessage("2+3?")], AgentContext("Be brief.", [], [adder]), config, events.append
            )
        follow_up = server.requests[1].body["messages"]
    check_event_grammar(events)
    roles = ["system", "user", "assistant", "toolResult", "assistant"]  # the tools declared first
    assert [message.role for message in new] == roles
    assert follow_up[2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    ]
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert final.content == [TextContent("It is 5.")]


ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


async def test_keep_alives_and_named_error_events() -> None:
    lines = [b": OPENROUTER PROCESSING\n\n", b"data:\n\n", sse_event(chunk({"content": "Hi"}))]
    events, _ = await run([*lines, sse_event({"message": "Model crashed"}, "error")])
    assert final_message(events).error_message == "Model crashed"
    assert final_message(events).content == [TextContent("Hi")]


async def test_fields_of_the_wrong_shape_are_malformed_data() -> None:
    events, _ = await run([sse_event(chunk({"content": "Hi"})), sse_event({"choices": "oops"})])
    message = final_message(events)
    assert message.error_message is not None
    assert message.error_message.startswith("Malformed stream data: ")
    assert message.content == [TextContent("Hi")]


async def test_abort_while_waiting_for_the_response() -> None:
    controller = AbortController()
    arrived = anyio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        arrived.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    events: list[AssistantMessageEvent] = []
    options = StreamOptions(api_key="k", signal=controller.signal)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:

        async def consume() -> None:
            events.extend(
                await collect(openai.stream_openai(MODEL, CONTEXT, options, client=client))
            )

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(consume)
            with anyio.fail_after(5):
                await arrived.wait()
            controller.abort()
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == "Request was aborted"


async def test_cancellation_from_outside_propagates() -> None:
    arrived = anyio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        arrived.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    events: list[AssistantMessageEvent] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as task_group:

                async def consume() -> None:
                    async for event in openai.stream_openai(MODEL, CONTEXT, OPTIONS, client=client):
                        events.append(event)

                task_group.start_soon(consume)
                with anyio.fail_after(5):
                    await arrived.wait()
                scope.cancel()
    assert scope.cancelled_caught
    assert events == []  # cancellation is not an error event: it simply propagates
