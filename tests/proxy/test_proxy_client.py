"""``stream_proxy`` against mock HTTP transports: the request, every wire event, the shared
partial, error statuses, protocol errors, abort and the missing terminal event."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from _proxy_support import ChunkStream, collect, final_message, kinds, wire, wire_line

from pi_core import (
    AbortController,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamDone,
    StreamError,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolReference,
    Usage,
    UserMessage,
)
from pi_core.proxy import ProxyStream, ProxyWire, stream_proxy
from pi_core.serialization import to_dict

pytestmark = pytest.mark.anyio

MODEL = Model("gpt-test", api="openai-completions", provider="openai", base_url="https://x.test")
CONTEXT = Context("be brief", [UserMessage("hi", timestamp=1)])
USAGE = {
    "input": 10,
    "output": 5,
    "cacheRead": 2,
    "cacheWrite": 1,
    "totalTokens": 18,
    "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.3},
}
DONE = {"type": "done", "reason": "stop", "usage": USAGE}
Handler = Callable[[httpx.Request], httpx.Response]


def sse(body: bytes | ChunkStream, status: int = 200) -> httpx.Response:
    headers = {"content-type": "text/event-stream"}
    if isinstance(body, ChunkStream):
        return httpx.Response(status, headers=headers, stream=body)
    return httpx.Response(status, headers=headers, content=body)


async def run(
    handler: Handler,
    options: StreamOptions | None = None,
    on_event: Callable[[AssistantMessageEvent], object] | None = None,
    *,
    context: Context = CONTEXT,
    proxy_url: str = "http://proxy.test",
    wire: ProxyWire = "1.6",
) -> list[AssistantMessageEvent]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        stream = stream_proxy(
            MODEL, context, options, proxy_url=proxy_url, auth_token="tok", client=client, wire=wire
        )
        return await collect(stream, on_event)


def replying(body: bytes) -> Handler:
    return lambda _: sse(body)


def error_of(events: list[AssistantMessageEvent]) -> StreamError:
    last = events[-1]
    assert isinstance(last, StreamError)
    return last


# --- the request ---------------------------------------------------------------------------


DECLARED = [
    {"name": "plain", "description": "a plain tool", "parameters": {"type": "object"}},
    {"name": "calc", "description": "adds", "parameters": {"type": "object"}},
]
"""The tools of the request test as the model sees them: no label, no execution mode."""
USER = {"role": "user", "content": "hi", "timestamp": 1}


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ("1.6", {"messages": [
            {"role": "system", "content": "sys", "toolsAdded": DECLARED, "timestamp": 0}, USER
        ]}),
        ("0.73", {"systemPrompt": "sys", "messages": [USER], "tools": DECLARED}),
    ],
)  # fmt: skip
async def test_the_request_is_upstreams_post_with_bearer_token_and_camel_case_json(
    form: ProxyWire, expected: dict[str, Any]
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return sse(wire({"type": "start"}, DONE))

    async def execute(*_: Any) -> AgentToolResult:
        return AgentToolResult([])

    tools: list[Tool] = [
        Tool("plain", "a plain tool", {"type": "object"}),
        AgentTool(
            "calc", "adds", {"type": "object"}, execute, label="Calc", execution_mode="sequential"
        ),
    ]
    context = Context("sys", [UserMessage("hi", timestamp=1)], tools)
    options = StreamOptions(
        api_key="sk-secret",
        temperature=0.5,
        max_tokens=100,
        reasoning="high",
        cache_retention="short",
        session_id="s1",
        headers={"x-a": "1"},
        metadata={"user": "u"},
        thinking_budgets={"high": 2048},
        timeout=30,
    )
    await run(handler, options, context=context, proxy_url="http://proxy.test/", wire=form)

    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == "http://proxy.test/api/stream"
    assert request.headers["authorization"] == "Bearer tok"
    assert request.headers["content-type"] == "application/json"
    body = json.loads(request.content)
    assert set(body) == {"model", "context", "options"}
    assert body["model"]["baseUrl"] == "https://x.test"
    assert body["model"]["contextWindow"] == 0
    assert body["context"] == expected
    assert body["options"] == {
        "temperature": 0.5,
        "maxTokens": 100,
        "reasoning": "high",
        "cacheRetention": "short",
        "sessionId": "s1",
        "headers": {"x-a": "1"},
        "metadata": {"user": "u"},
        "thinkingBudgets": {"high": 2048},
    }
    assert b"sk-secret" not in request.content
    assert "sk-secret" not in str(request.headers)


MID_WAY = Context(
    None,
    [
        SystemMessage("sys", tools_added=[Tool("a", "A", {"type": "object"})], timestamp=0),
        UserMessage("hi", timestamp=1),
        SystemMessage(
            "more", {"tone": "dry"}, [Tool("b", "B", {})], [ToolReference("a")], timestamp=2
        ),
        UserMessage("again", timestamp=3),
    ],
)


async def test_the_current_body_sends_system_messages_where_the_transcript_has_them() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return sse(wire(DONE))

    await run(handler, context=MID_WAY)
    assert seen[0]["context"] == {"messages": [to_dict(m) for m in MID_WAY.messages]}


async def test_the_073_body_carries_the_prompt_and_tools_the_transcript_ends_with() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return sse(wire(DONE))

    await run(handler, context=MID_WAY, wire="0.73")
    assert seen[0]["context"] == {
        "systemPrompt": "sys\n\nmore\n\ndry",
        "messages": [to_dict(MID_WAY.messages[1]), to_dict(MID_WAY.messages[3])],
        "tools": [{"name": "b", "description": "B", "parameters": {}}],
    }


async def test_an_unknown_wire_is_refused_before_anything_is_sent() -> None:
    seen: list[httpx.Request] = []
    with pytest.raises(ValueError, match=r"wire must be one of '1\.6', '0\.73', got '1\.0'"):
        await run(seen.append, wire="1.0")  # type: ignore[arg-type]
    assert seen == []
    with pytest.raises(ValueError, match="wire must be one of"):
        ProxyStream("http://proxy.test", "tok", wire="2")  # type: ignore[arg-type]
    assert "wire='0.73'" in repr(ProxyStream("http://proxy.test", "tok", wire="0.73"))
    assert "wire" not in repr(ProxyStream("http://proxy.test", "tok"))


async def test_unset_options_are_left_out_and_off_means_no_reasoning() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return sse(wire(DONE))

    await run(handler, StreamOptions(reasoning="off"))
    assert seen[0]["options"] == {}


# --- reconstruction ------------------------------------------------------------------------


async def test_every_wire_event_rebuilds_one_shared_partial_message() -> None:
    body = wire(
        {"type": "start"},
        {"type": "thinking_start", "contentIndex": 0},
        {"type": "thinking_delta", "contentIndex": 0, "delta": "hmm, "},
        {"type": "thinking_delta", "contentIndex": 0, "delta": "yes"},
        {"type": "thinking_end", "contentIndex": 0, "contentSignature": "sig-t"},
        {"type": "text_start", "contentIndex": 1},
        {"type": "text_delta", "contentIndex": 1, "delta": "Hello"},
        {"type": "text_delta", "contentIndex": 1, "delta": " world"},
        {"type": "text_end", "contentIndex": 1, "contentSignature": "sig-x"},
        {"type": "toolcall_start", "contentIndex": 2, "id": "c1", "toolName": "calc"},
        {"type": "toolcall_delta", "contentIndex": 2, "delta": '{"a": 1}'},
        {"type": "toolcall_end", "contentIndex": 2},
        {**DONE, "reason": "toolUse"},
    )
    events = await run(replying(body))

    assert kinds(events) == [
        "start",
        *("thinking_start", "thinking_delta", "thinking_delta", "thinking_end"),
        *("text_start", "text_delta", "text_delta", "text_end"),
        *("toolcall_start", "toolcall_delta", "toolcall_end"),
        "done",
    ]
    message = final_message(events)
    assert all(event.partial is message for event in events[:-1])  # type: ignore[union-attr]
    assert message.content == [
        ThinkingContent("hmm, yes", "sig-t"),
        TextContent("Hello world", "sig-x"),
        ToolCall("c1", "calc", {"a": 1}),
    ]
    assert (message.api, message.provider, message.model) == (
        "openai-completions",
        "openai",
        "gpt-test",
    )
    assert message.stop_reason == "toolUse"
    assert message.usage.total_tokens == 18
    assert message.usage.cost.total == 0.3
    assert events[4].content == "hmm, yes"  # type: ignore[union-attr]
    assert events[8].content == "Hello world"  # type: ignore[union-attr]
    assert events[11].tool_call is message.content[2]  # type: ignore[union-attr]


async def test_tool_arguments_grow_from_partial_json() -> None:
    body = wire(
        {"type": "start"},
        {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "write"},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": '{"path": "/tm'},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": 'p/a", "n": 4'},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": "2}"},
        {"type": "toolcall_end", "contentIndex": 0},
        DONE,
    )
    seen: list[tuple[object, dict[str, Any]]] = []

    def on_event(event: AssistantMessageEvent) -> None:
        if isinstance(event, ToolCallDelta):
            block = event.partial.content[0]
            assert isinstance(block, ToolCall)
            seen.append((block, block.arguments))

    events = await run(replying(body), on_event=on_event)
    assert [arguments for _, arguments in seen] == [
        {"path": "/tm"},
        {"path": "/tmp/a", "n": 4},
        {"path": "/tmp/a", "n": 42},
    ]
    # Each delta puts a new block in place, as upstream's spread copy: earlier ones keep theirs.
    assert len({id(block) for block, _ in seen}) == 3
    assert final_message(events).content == [ToolCall("c1", "write", {"path": "/tmp/a", "n": 42})]


async def test_an_error_event_ends_the_stream_with_its_reason_message_and_usage() -> None:
    body = wire(
        {"type": "start"},
        {"type": "text_start", "contentIndex": 0},
        {"type": "text_delta", "contentIndex": 0, "delta": "par"},
        {"type": "error", "reason": "error", "errorMessage": "upstream 500", "usage": USAGE},
    )
    events = await run(replying(body))
    error = error_of(events)
    assert error.reason == "error"
    assert error.error.error_message == "upstream 500"
    assert error.error.stop_reason == "error"
    assert error.error.usage.input == 10
    assert error.error.content == [TextContent("par")]


async def test_lines_without_data_prefix_are_ignored_and_events_after_the_terminal_too() -> None:
    body = (
        b": a comment\n"
        b"event: message\n"
        b'data:{"type": "text_start", "contentIndex": 0}\n'  # no space: not a data line
        b"data: \n"
        b"\n"
        + wire_line({"type": "start"})
        + b'data: {"type": "start"}\r\n'  # a repeated start is dropped
        + wire_line(DONE)
        + wire_line({"type": "text_start", "contentIndex": 0})
        + b"data: not json\n"
    )
    events = await run(replying(body))
    assert kinds(events) == ["start", "done"]
    assert final_message(events).content == []


async def test_a_stream_without_start_gets_one(caplog: pytest.LogCaptureFixture) -> None:
    body = wire(
        {"type": "text_start", "contentIndex": 0},
        {"type": "mystery", "contentIndex": 0},
        {"type": "text_delta", "contentIndex": 0, "delta": "x"},
        {"type": "text_end", "contentIndex": 0},
        DONE,
    )
    with caplog.at_level(logging.WARNING, logger="pi_core.proxy"):
        events = await run(replying(body))
    assert kinds(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert "Unhandled proxy event type: mystery" in caplog.text


async def test_a_lone_terminal_event_is_a_valid_stream() -> None:
    events = await run(replying(wire(DONE)))
    assert kinds(events) == ["done"]


# --- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, b'{"error": "Invalid bearer token"}', "Proxy error: Invalid bearer token"),
        (422, b'{"error": {"path": "x"}}', 'Proxy error: {"path": "x"}'),
        (502, b"<html>bad gateway</html>", "Proxy error: 502 Bad Gateway"),
        (500, b'{"message": "no error field"}', "Proxy error: 500 Internal Server Error"),
        (404, b'{"error": ""}', "Proxy error: 404 Not Found"),
    ],
)
async def test_an_error_status_is_a_lone_proxy_error(
    status: int, body: bytes, expected: str
) -> None:
    events = await run(lambda _: httpx.Response(status, content=body))
    assert kinds(events) == ["error"]
    error = error_of(events)
    assert error.reason == "error"
    assert error.error.error_message == expected
    assert error.error.stop_reason == "error"


async def test_a_body_without_terminal_event_ends_with_an_error_not_a_hang() -> None:
    body = wire(
        {"type": "start"},
        {"type": "text_start", "contentIndex": 0},
        {"type": "text_delta", "contentIndex": 0, "delta": "cut"},
    )
    events = await run(replying(body))
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    error = error_of(events)
    assert error.reason == "error"
    assert error.error.error_message == (
        "Connection closed by proxy server before the response completed"
    )
    assert error.error.content == [TextContent("cut")]
    assert error.error is events[0].partial  # type: ignore[union-attr]


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_last_line_without_its_newline_is_read(chunked: bool) -> None:
    body = wire({"type": "start"}, {"type": "text_start", "contentIndex": 0})
    last = b'data: {"type": "done", "reason": "stop", "usage": ' + json.dumps(USAGE).encode()
    last += b"}"  # the body ends here, without a newline
    stream = ChunkStream([body, *(last[i : i + 7] for i in range(0, len(last), 7))])
    events = await run(lambda _: sse(stream if chunked else body + last))
    assert kinds(events) == ["start", "text_start", "done"]
    assert final_message(events).usage.total_tokens == 18


async def test_the_terminal_event_may_defer_the_reply_and_name_the_thinking_level() -> None:
    done = {**DONE, "reason": "deferred", "providerThinkingLevel": "high"}
    events = await run(replying(wire({"type": "start"}, done)))
    assert isinstance(events[-1], StreamDone) and events[-1].reason == "deferred"
    message = final_message(events)
    assert (message.stop_reason, message.provider_thinking_level) == ("deferred", "high")


async def test_the_partial_is_pending_until_the_terminal_event() -> None:
    seen: list[str] = []
    body = wire({"type": "start"}, {"type": "text_start", "contentIndex": 0}, DONE)
    events = await run(replying(body), on_event=lambda e: seen.append(final(e).stop_reason))
    assert seen == ["pending", "pending", "stop"]
    assert final_message(events).stop_reason == "stop"


def final(event: AssistantMessageEvent) -> AssistantMessage:
    """The message an event carries: the partial, or the final one of a terminal event."""
    if isinstance(event, StreamDone):
        return event.message
    if isinstance(event, StreamError):
        return event.error
    return event.partial


async def test_a_last_line_without_newline_that_is_not_an_event_still_ends_in_an_error() -> None:
    body = wire({"type": "start"}) + b": a comment, no newline"
    events = await run(replying(body))
    assert kinds(events) == ["start", "error"]
    assert error_of(events).error.error_message == (
        "Connection closed by proxy server before the response completed"
    )


async def test_a_malformed_json_line_ends_the_stream_after_the_events_before_it() -> None:
    body = wire({"type": "start"}, {"type": "text_start", "contentIndex": 0})
    body += b"data: {not json\n\n" + wire(DONE)
    events = await run(replying(body))
    assert kinds(events) == ["start", "text_start", "error"]
    message = error_of(events).error.error_message
    assert message is not None
    assert message.startswith("Invalid JSON in proxy stream: ")
    assert "{not json" in message


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"type": "text_delta", "contentIndex": 0, "delta": "x"}, "Received text_delta for non-text content"),
        ({"type": "text_end", "contentIndex": 0}, "Received text_end for non-text content"),
        ({"type": "thinking_delta", "contentIndex": 0, "delta": "x"}, "Received thinking_delta for non-thinking content"),
        ({"type": "thinking_end", "contentIndex": 0}, "Received thinking_end for non-thinking content"),
        ({"type": "toolcall_delta", "contentIndex": 0, "delta": "{"}, "Received toolcall_delta for non-toolCall content"),
        ({"type": "text_delta", "contentIndex": 5, "delta": "x"}, "Received text_delta for non-text content"),
        ({"type": "text_start", "contentIndex": 3}, "Malformed proxy event text_start: contentIndex 3 skips past the end of the content (1 blocks)"),
        ({"type": "text_start", "contentIndex": "0"}, "Malformed proxy event text_start: contentIndex is '0'"),
        ({"type": "toolcall_start", "contentIndex": 1, "id": 7, "toolName": "t"}, "Malformed proxy event toolcall_start: id is 7"),
        ({"type": "done", "reason": "error", "usage": USAGE}, "Malformed proxy event done: reason is 'error'"),
        ({"type": "error", "reason": "stop", "usage": USAGE}, "Malformed proxy event error: reason is 'stop'"),
        ({"type": "done", "reason": "stop", "usage": {"input": "many"}}, "Malformed proxy event done: Cannot load Usage: expected an integer, got 'many' @ $.input"),
        ({"no": "type"}, 'Malformed proxy event: no type in {"no": "type"}'),
        ([1, 2], "Malformed proxy event: expected a JSON object: [1, 2]"),
    ],
)  # fmt: skip
async def test_protocol_errors_end_the_stream_with_their_text(event: object, expected: str) -> None:
    # A thinking block at index 0, so that text events there are "for non-text content".
    body = wire({"type": "start"}, {"type": "thinking_start", "contentIndex": 0})
    if isinstance(event, dict) and event.get("type", "").startswith("thinking"):
        body = wire({"type": "start"}, {"type": "text_start", "contentIndex": 0})
    events = await run(replying(body + wire_line(event) + wire(DONE)))
    error = error_of(events)
    assert error.reason == "error"
    assert error.error.error_message == expected


async def test_toolcall_end_for_another_block_is_ignored_as_upstream() -> None:
    body = wire(
        {"type": "start"},
        {"type": "text_start", "contentIndex": 0},
        {"type": "toolcall_end", "contentIndex": 0},
        {"type": "toolcall_end", "contentIndex": 9},
        DONE,
    )
    events = await run(replying(body))
    assert kinds(events) == ["start", "text_start", "done"]


async def test_the_complete_tool_call_of_toolcall_end_wins_over_the_streamed_one() -> None:
    body = wire(
        {"type": "start"},
        {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "echo"},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": '{"v":"x'},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": 'y"}'},
        {
            "type": "toolcall_end",
            "contentIndex": 0,
            "toolCall": {"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"v": "Z"}},
        },
        DONE,
    )
    events = await run(replying(body))
    call = ToolCall("c1", "echo", {"v": "Z"})
    assert final_message(events).content == [call]
    assert events[-2].tool_call == call  # type: ignore[union-attr]


async def test_a_partial_tool_call_of_toolcall_end_overrides_only_its_own_fields() -> None:
    body = wire(
        {"type": "start"},
        {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "echo"},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": '{"v": 1}'},
        {"type": "toolcall_end", "contentIndex": 0, "toolCall": {"thoughtSignature": "sig"}},
        DONE,
    )
    events = await run(replying(body))
    assert final_message(events).content == [
        ToolCall("c1", "echo", {"v": 1}, thought_signature="sig")
    ]


@pytest.mark.parametrize(
    ("tool_call", "expected"),
    [
        ("c1", "Malformed proxy event toolcall_end: toolCall is 'c1'"),
        ({"arguments": [1]}, "Malformed proxy event toolcall_end: Cannot load ToolCall: "),
    ],
)
async def test_a_malformed_tool_call_of_toolcall_end_is_a_protocol_error(
    tool_call: object, expected: str
) -> None:
    body = wire(
        {"type": "start"},
        {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "echo"},
        {"type": "toolcall_end", "contentIndex": 0, "toolCall": tool_call},
        DONE,
    )
    events = await run(replying(body))
    assert kinds(events) == ["start", "toolcall_start", "error"]
    message = error_of(events).error.error_message
    assert message is not None and message.startswith(expected), message


async def test_a_line_past_the_limit_ends_the_stream() -> None:
    from pi_core._http import MAX_LINE_BYTES

    block = b"x" * (1024 * 1024)
    chunks = [wire({"type": "start"}), b'data: {"type": "text_delta", "delta": "']
    chunks += [block] * (MAX_LINE_BYTES // len(block) + 2)  # one line, never ended
    stream = ChunkStream(chunks)
    events = await run(lambda _: sse(stream))
    assert kinds(events) == ["start", "error"]
    assert error_of(events).error.error_message == (
        f"A line of the proxy stream is longer than {MAX_LINE_BYTES} bytes"
    )
    assert stream.closed.is_set()


async def test_a_network_error_is_a_stream_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    events = await run(handler)
    assert kinds(events) == ["error"]
    assert error_of(events).error.error_message == (
        "Proxy request failed: Connection error (http://proxy.test/api/stream): cannot connect"
    )


async def test_a_timeout_ends_a_silent_stream() -> None:
    stream = ChunkStream([wire({"type": "start"})], hang=True)
    events = await run(lambda _: sse(stream), StreamOptions(timeout=0.05))
    assert kinds(events) == ["start", "error"]
    error = error_of(events)
    assert error.reason == "error"
    assert error.error.error_message == "Request timed out after 0.05 s"
    assert stream.closed.is_set()


# --- abort -----------------------------------------------------------------------------------


async def test_a_signal_aborted_before_the_call_sends_nothing() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return sse(wire(DONE))

    controller = AbortController()
    controller.abort()
    events = await run(handler, StreamOptions(signal=controller.signal))
    assert kinds(events) == ["error"]
    error = error_of(events)
    assert (error.reason, error.error.stop_reason) == ("aborted", "aborted")
    assert error.error.error_message == "This operation was aborted"
    assert calls == []


async def test_abort_mid_body_cancels_the_read_at_once() -> None:
    stream = ChunkStream(
        [
            wire({"type": "start"}, {"type": "text_start", "contentIndex": 0}),
            wire({"type": "text_delta", "contentIndex": 0, "delta": "Hel"}),
        ],
        hang=True,  # the server never sends more: only the abort can end this
    )
    controller = AbortController()

    def on_event(event: AssistantMessageEvent) -> None:
        if event.type == "text_delta":
            controller.abort()

    events = await run(lambda _: sse(stream), StreamOptions(signal=controller.signal), on_event)
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    error = error_of(events)
    assert (error.reason, error.error.stop_reason) == ("aborted", "aborted")
    assert error.error.error_message == "Request aborted by user"
    assert error.error.content == [TextContent("Hel")]
    assert stream.closed.is_set()


async def test_abort_while_waiting_for_the_body_cancels_the_read() -> None:
    stream = ChunkStream([wire({"type": "start"})], hang=True)
    controller = AbortController()

    async def abort_when_blocked() -> None:
        await anyio.wait_all_tasks_blocked()
        controller.abort()

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(abort_when_blocked)
        events = await run(lambda _: sse(stream), StreamOptions(signal=controller.signal))
    assert kinds(events) == ["start", "error"]
    assert error_of(events).error.error_message == "Request aborted by user"


async def test_a_consumer_that_stops_early_releases_the_response() -> None:
    stream = ChunkStream([wire({"type": "start"})], hang=True)
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda _: sse(stream))) as client:
        events = stream_proxy(MODEL, CONTEXT, proxy_url="http://p", auth_token="t", client=client)
        with anyio.fail_after(5):
            first = await anext(events)
            await events.aclose()  # type: ignore[attr-defined]
    assert first.type == "start"
    assert stream.closed.is_set()


async def test_stream_done_carries_the_usage_object() -> None:
    events = await run(replying(wire({"type": "start"}, DONE)))
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.message.usage == Usage(10, 5, 2, 1, 18, done.message.usage.cost)
