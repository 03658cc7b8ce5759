"""``create_proxy_app`` through httpx's ASGI transport and direct ASGI calls: routing, the token,
body validation, the event encoding, failures of the wrapped stream, and client disconnects."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, MutableMapping, Sequence
from typing import Any

import anyio
import httpx
import pytest

import pi_core.proxy
from pi_core import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamDone,
    StreamError,
    StreamOptions,
    StreamStart,
    SystemMessage,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingContent,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageCost,
    UserMessage,
    current_system_prompt,
    current_tools,
)
from pi_core.proxy import ProxyApp, create_proxy_app

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
MODEL: dict[str, Any] = {"id": "m", "api": "scripted", "provider": "test"}
BODY: dict[str, Any] = {
    "model": MODEL,
    "context": {
        "systemPrompt": "sys",
        "messages": [{"role": "user", "content": "hi", "timestamp": 1}],
    },
    "options": {"temperature": 0.25, "sessionId": "s1", "apiKey": "sk-client", "transport": "sse"},
}


class Recorded:
    """What the scripted stream function was called with, and how it ended."""

    def __init__(self) -> None:
        self.calls: list[tuple[Model, Context, StreamOptions]] = []
        self.closed = anyio.Event()
        self.aborted_at_close: bool | None = None


def scripted(
    events: Callable[[AssistantMessage], list[AssistantMessageEvent]],
    record: Recorded | None = None,
    *,
    hang: bool = False,
    fail: Exception | None = None,
) -> Callable[[Model, Context, StreamOptions], AsyncIterator[AssistantMessageEvent]]:
    """A stream function yielding ``events(partial)``; then it hangs or raises, if asked."""
    record = record if record is not None else Recorded()

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        record.calls.append((model, context, options))
        try:
            for event in events(AssistantMessage([], model.api, model.provider, model.id)):
                await anyio.lowlevel.checkpoint()
                yield event
            if fail is not None:
                raise fail
            if hang:
                await anyio.sleep_forever()
        finally:
            assert options.signal is not None
            record.aborted_at_close = options.signal.aborted
            record.closed.set()

    return stream


def text_reply(partial: AssistantMessage) -> list[AssistantMessageEvent]:
    partial.content.append(TextContent("hi"))
    return [StreamStart(partial), TextStart(0, partial), TextDelta(0, "hi", partial)]


async def post(
    app: ProxyApp,
    body: object = BODY,
    *,
    headers: dict[str, str] | None = AUTH,
    method: str = "POST",
    path: str = "/api/stream",
    content: bytes | None = None,
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        data = content if content is not None else json.dumps(body).encode()
        with anyio.fail_after(10):
            return await client.request(method, path, content=data, headers=headers)


def data_lines(response: httpx.Response) -> list[dict[str, Any]]:
    """The wire events of a response, checking the framing: ``data: <json>`` and a blank line."""
    text = response.text
    assert text.endswith("\n\n")
    events = []
    for chunk in text[:-2].split("\n\n"):
        assert chunk.startswith("data: ") and "\n" not in chunk
        events.append(json.loads(chunk[len("data: ") :]))
    return events


# --- the public surface ----------------------------------------------------------------------


def test_the_public_names_are_sorted_importable_and_homed_in_pi_core_proxy() -> None:
    names = pi_core.proxy.__all__
    assert list(names) == sorted(names)
    for name in names:
        obj = getattr(pi_core.proxy, name)
        if isinstance(obj, type) or inspect.isfunction(obj):
            assert obj.__module__ == "pi_core.proxy"


def test_an_empty_token_or_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="auth_token must not be empty"):
        create_proxy_app(auth_token="")
    with pytest.raises(ValueError, match="max_body_bytes must be positive"):
        create_proxy_app(auth_token="t", max_body_bytes=0)
    assert TOKEN not in repr(create_proxy_app(auth_token=TOKEN))


# --- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, "Missing bearer token"),
        ({"authorization": "Basic czNjcmV0"}, "Missing bearer token"),
        ({"authorization": "Bearer wrong"}, "Invalid bearer token"),
        ({"authorization": f"Bearer {TOKEN}x"}, "Invalid bearer token"),
        ({"authorization": "Bearer"}, "Invalid bearer token"),
    ],
)
async def test_a_missing_or_wrong_token_is_401(headers: dict[str, str], expected: str) -> None:
    record = Recorded()
    response = await post(
        create_proxy_app(scripted(text_reply, record), auth_token=TOKEN), headers=headers
    )
    assert response.status_code == 401
    assert response.json() == {"error": expected}
    assert response.headers["www-authenticate"] == "Bearer"
    assert record.calls == []


async def test_the_scheme_is_case_insensitive() -> None:
    app = create_proxy_app(scripted(text_reply, hang=False), auth_token=TOKEN)
    response = await post(app, headers={"authorization": f"bearer {TOKEN}"})
    assert response.status_code == 200


async def test_other_paths_are_404_and_other_methods_405() -> None:
    app = create_proxy_app(scripted(text_reply), auth_token=TOKEN)
    response = await post(app, path="/api/other")
    assert (response.status_code, response.json()) == (404, {"error": "Not found"})
    response = await post(app, method="GET", content=b"")
    assert (response.status_code, response.json()) == (405, {"error": "Method not allowed"})
    assert response.headers["allow"] == "POST"


async def test_malformed_json_is_400() -> None:
    app = create_proxy_app(scripted(text_reply), auth_token=TOKEN)
    response = await post(app, content=b'{"model": ')
    assert response.status_code == 400
    assert response.json()["error"].startswith("Malformed JSON in request body: ")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, "Invalid request body: required field missing @ $.model; required field missing @ $.context"),
        ([], "Invalid request body: expected an object for ProxyRequest, got [] @ $"),
        ({**BODY, "model": {"id": 5}}, "Invalid request body: expected a string, got 5 @ $.model.id"),
        (
            {**BODY, "context": {"messages": [{"role": "robot"}]}},
            "Invalid request body: unknown message role 'robot' (expected one of 'system', 'user', 'assistant', 'toolResult') @ $.context.messages[0]",
        ),
        (
            {**BODY, "options": {"maxTokens": "many", "reasoning": "most"}},
            "Invalid request body: expected an integer, got 'many' @ $.options.maxTokens; expected one of 'off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', got 'most' @ $.options.reasoning",
        ),
    ],
)  # fmt: skip
async def test_wrong_shapes_are_422_with_the_path_of_each_problem(
    body: object, expected: str
) -> None:
    record = Recorded()
    response = await post(create_proxy_app(scripted(text_reply, record), auth_token=TOKEN), body)
    assert response.status_code == 422
    assert response.json() == {"error": expected}
    assert record.calls == []


async def test_an_oversized_body_is_413_by_its_length() -> None:
    app = create_proxy_app(scripted(text_reply), auth_token=TOKEN, max_body_bytes=64)
    response = await post(app)
    assert response.status_code == 413
    assert response.json() == {"error": "Request body too large (limit 64 bytes)"}


async def test_an_oversized_body_is_413_while_it_streams_in() -> None:
    # No content-length: the limit must hold while the chunks arrive.
    chunks = [{"type": "http.request", "body": b"x" * 40, "more_body": True}] * 3
    messages = await call_asgi(
        create_proxy_app(scripted(text_reply), auth_token=TOKEN, max_body_bytes=64), chunks
    )
    assert messages[0]["status"] == 413
    assert json.loads(messages[1]["body"]) == {"error": "Request body too large (limit 64 bytes)"}


async def test_resolve_model_can_refuse_or_replace_the_model() -> None:
    record = Recorded()
    pinned = Model("m", api="scripted", provider="test", base_url="https://pinned.test")

    def resolve(model: Model) -> Model | None:
        return pinned if model.id == "m" else None

    app = create_proxy_app(scripted(text_reply, record), auth_token=TOKEN, resolve_model=resolve)
    response = await post(app, {**BODY, "model": {**MODEL, "id": "other"}})
    assert (response.status_code, response.json()) == (
        403,
        {"error": "Model not allowed: test/other"},
    )
    response = await post(app)
    assert response.status_code == 200
    assert record.calls[0][0] is pinned


# --- streaming -------------------------------------------------------------------------------


def every_event(partial: AssistantMessage) -> list[AssistantMessageEvent]:
    """A reply with every kind of event; the signatures live in the partial's blocks."""
    thinking = ThinkingContent("hm", "sig-t")
    text = TextContent("hi", "sig-x")
    streamed = ToolCall("c1", "calc", {"a": 1})
    whole = ToolCall("c2", "calc", {"b": "ü"})  # a provider that got the arguments whole
    partial.content.extend([thinking, text, streamed, whole])
    partial.usage = Usage(3, 4, 0, 0, 7, UsageCost(total=0.5))
    return [
        StreamStart(partial),
        ThinkingStart(0, partial),
        ThinkingDelta(0, "hm", partial),
        ThinkingEnd(0, "hm", partial),
        TextStart(1, partial),
        TextDelta(1, "hi", partial),
        TextEnd(1, "hi", partial),
        ToolCallStart(2, partial),
        ToolCallDelta(2, '{"a": 1}', partial),
        ToolCallEnd(2, streamed, partial),
        ToolCallStart(3, partial),
        ToolCallEnd(3, whole, partial),
        StreamDone("toolUse", partial),
    ]


USAGE_JSON = {
    "input": 3,
    "output": 4,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 7,
    "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.5},
}

# toolcall_end carries the complete call; a call that arrived whole also gets one delta, for
# clients that rebuild the arguments from the deltas alone.
CALC_1 = {"type": "toolCall", "id": "c1", "name": "calc", "arguments": {"a": 1}}
CALC_2 = {"type": "toolCall", "id": "c2", "name": "calc", "arguments": {"b": "ü"}}


async def test_events_are_written_in_the_wire_format_without_partial() -> None:
    response = await post(create_proxy_app(scripted(every_event), auth_token=TOKEN))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert data_lines(response) == [
        {"type": "start"},
        {"type": "thinking_start", "contentIndex": 0},
        {"type": "thinking_delta", "contentIndex": 0, "delta": "hm"},
        {"type": "thinking_end", "contentIndex": 0, "contentSignature": "sig-t"},
        {"type": "text_start", "contentIndex": 1},
        {"type": "text_delta", "contentIndex": 1, "delta": "hi"},
        {"type": "text_end", "contentIndex": 1, "contentSignature": "sig-x"},
        {"type": "toolcall_start", "contentIndex": 2, "id": "c1", "toolName": "calc"},
        {"type": "toolcall_delta", "contentIndex": 2, "delta": '{"a": 1}'},
        {"type": "toolcall_end", "contentIndex": 2, "toolCall": CALC_1},
        {"type": "toolcall_start", "contentIndex": 3, "id": "c2", "toolName": "calc"},
        {"type": "toolcall_delta", "contentIndex": 3, "delta": '{"b":"ü"}'},
        {"type": "toolcall_end", "contentIndex": 3, "toolCall": CALC_2},
        {"type": "done", "reason": "toolUse", "usage": USAGE_JSON},
    ]


async def test_an_error_event_carries_reason_message_and_usage() -> None:
    def failing(partial: AssistantMessage) -> list[AssistantMessageEvent]:
        partial.stop_reason, partial.error_message = "error", "rate limited"
        partial.usage = Usage(3, 4, 0, 0, 7, UsageCost(total=0.5))
        return [StreamStart(partial), StreamError("error", partial)]

    response = await post(create_proxy_app(scripted(failing), auth_token=TOKEN))
    assert data_lines(response) == [
        {"type": "start"},
        {"type": "error", "reason": "error", "errorMessage": "rate limited", "usage": USAGE_JSON},
    ]


async def test_the_stream_function_gets_the_clients_options_and_the_servers_signal() -> None:
    record = Recorded()
    await post(create_proxy_app(scripted(text_reply, record), auth_token=TOKEN))
    ((model, context, options),) = record.calls
    assert (model.id, model.api, model.provider) == ("m", "scripted", "test")
    assert current_system_prompt(context.messages) == "sys"
    assert (options.temperature, options.session_id) == (0.25, "s1")
    assert options.api_key is None  # never the client's
    assert isinstance(options.signal, AbortSignal)


# --- the two request bodies ------------------------------------------------------------------

ECHO_JSON = {"name": "echo", "description": "echoes", "parameters": {"type": "object"}}
USER_JSON = {"role": "user", "content": "hi", "timestamp": 1}
SEEN = Context(
    None,
    [
        SystemMessage("sys", tools_added=[Tool("echo", "echoes", {"type": "object"})], timestamp=0),
        UserMessage("hi", timestamp=1),
    ],
)
"""What the stream function gets for either body below: one transcript, the prompt leading."""


@pytest.mark.parametrize(
    "context",
    [
        {"systemPrompt": "sys", "messages": [USER_JSON], "tools": [{**ECHO_JSON, "label": "Echo"}]},
        {"messages": [
            {"role": "system", "content": "sys", "toolsAdded": [ECHO_JSON], "timestamp": 0},
            USER_JSON,
        ]},
    ],
    ids=["0.73.1", "1.6.0"],
)  # fmt: skip
async def test_both_bodies_reach_the_stream_function_as_one_transcript(
    context: dict[str, Any],
) -> None:
    record = Recorded()
    response = await post(
        create_proxy_app(scripted(text_reply, record), auth_token=TOKEN),
        {**BODY, "context": context},
    )
    assert response.status_code == 200
    ((_, seen, _),) = record.calls
    assert seen == SEEN
    assert (current_system_prompt(seen.messages), current_tools(seen.messages)) == (
        "sys",
        [Tool("echo", "echoes", {"type": "object"})],
    )


async def test_a_prompt_beside_system_messages_leads_them_as_the_shorthand_does() -> None:
    record = Recorded()
    later = {"role": "system", "content": "and be kind", "timestamp": 5}
    context = {"systemPrompt": "sys", "messages": [USER_JSON, later]}
    await post(
        create_proxy_app(scripted(text_reply, record), auth_token=TOKEN),
        {**BODY, "context": context},
    )
    ((_, seen, _),) = record.calls
    assert [message.role for message in seen.messages] == ["system", "user", "system"]
    assert current_system_prompt(seen.messages) == "sys\n\nand be kind"


NEITHER = "Invalid request body: context is neither 1.6.0's {messages} nor 0.73.1's {systemPrompt, messages, tools}: "


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ("sys", NEITHER + "expected an object, got str @ $.context"),
        (None, NEITHER + "expected an object, got null @ $.context"),
        ([USER_JSON], NEITHER + "expected an object, got list @ $.context"),
        ({"systemPrompt": "sys", "tools": []}, NEITHER + "it has no messages @ $.context.messages"),
        ({}, NEITHER + "it has no messages @ $.context.messages"),
        ({"messages": [USER_JSON], "systemPrompt": 3}, "Invalid request body: expected a string, got 3 @ $.context.systemPrompt"),
        ({"messages": [{"role": "system", "content": "s", "sections": {"a": 1}, "timestamp": 0}]}, "Invalid request body: "),
    ],
)  # fmt: skip
async def test_a_context_in_neither_form_is_422_saying_why(context: Any, expected: str) -> None:
    record = Recorded()
    app = create_proxy_app(scripted(text_reply, record), auth_token=TOKEN)
    response = await post(app, {**BODY, "context": context})
    assert response.status_code == 422
    assert response.json()["error"].startswith(expected), response.json()["error"]
    assert record.calls == []


async def test_the_providers_thinking_level_travels_with_the_terminal_event() -> None:
    def thought(partial: AssistantMessage) -> list[AssistantMessageEvent]:
        partial.provider_thinking_level = "medium"
        return [StreamStart(partial), StreamDone("stop", partial)]

    response = await post(create_proxy_app(scripted(thought), auth_token=TOKEN))
    assert data_lines(response)[-1] == {
        "type": "done",
        "reason": "stop",
        "usage": ZERO_USAGE,
        "providerThinkingLevel": "medium",
    }


ZERO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
}


async def test_a_stream_that_ends_without_terminal_event_gets_an_error_event() -> None:
    response = await post(create_proxy_app(scripted(text_reply), auth_token=TOKEN))
    assert data_lines(response)[-1] == {
        "type": "error",
        "reason": "error",
        "errorMessage": "Stream ended without a terminal event",
        "usage": ZERO_USAGE,
    }


async def test_a_raising_stream_function_gets_an_error_event_and_only_its_type_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_proxy_app(scripted(text_reply, fail=RuntimeError("key=sk-leak")), auth_token=TOKEN)
    response = await post(app)
    assert data_lines(response)[-1]["errorMessage"] == "key=[redacted]"  # nor sent to the client
    assert "RuntimeError" in caplog.text
    assert "sk-leak" not in caplog.text


async def test_a_stream_function_that_raises_when_called_gets_an_error_event() -> None:
    def broken(model: Model, context: Context, options: StreamOptions) -> Any:
        raise ValueError("no such model")

    response = await post(create_proxy_app(broken, auth_token=TOKEN))
    assert [line["type"] for line in data_lines(response)] == ["error"]
    assert data_lines(response)[0]["errorMessage"] == "no such model"


async def test_an_awaitable_stream_result_is_awaited() -> None:
    async def deferred(model: Model, context: Context, options: StreamOptions) -> Any:
        return scripted(every_event)(model, context, options)

    response = await post(create_proxy_app(deferred, auth_token=TOKEN))
    assert data_lines(response)[-1]["type"] == "done"


async def test_events_after_the_terminal_one_are_not_sent() -> None:
    def chatty(partial: AssistantMessage) -> list[AssistantMessageEvent]:
        return [StreamStart(partial), StreamDone("stop", partial), TextStart(0, partial)]

    response = await post(create_proxy_app(scripted(chatty), auth_token=TOKEN))
    assert [line["type"] for line in data_lines(response)] == ["start", "done"]


async def test_a_tool_call_event_that_contradicts_its_partial_is_an_error_event() -> None:
    def confused(partial: AssistantMessage) -> list[AssistantMessageEvent]:
        partial.content.append(TextContent(""))
        return [StreamStart(partial), ToolCallStart(0, partial)]

    response = await post(create_proxy_app(scripted(confused), auth_token=TOKEN))
    assert data_lines(response)[-1]["errorMessage"] == (
        "toolcall_start at contentIndex 0, which is not a tool call"
    )


# --- direct ASGI: disconnects and lifespan ---------------------------------------------------

Message = MutableMapping[str, Any]


async def call_asgi(
    app: ProxyApp,
    requests: Sequence[Message],
    *,
    disconnect: anyio.Event | None = None,
    on_send: Callable[[Message], None] | None = None,
) -> list[Message]:
    """Call the app with ``requests`` as the body messages; after them, ``receive`` waits for
    ``disconnect`` (never, by default) and then says the client left."""
    sent: list[Message] = []
    pending = list(requests)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        await (disconnect or anyio.Event()).wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)
        if on_send is not None:
            on_send(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/stream",
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode())],
    }
    with anyio.fail_after(10):
        await app(scope, receive, send)
    return sent


async def test_a_client_disconnect_aborts_and_cancels_the_stream() -> None:
    record = Recorded()
    app = create_proxy_app(scripted(text_reply, record, hang=True), auth_token=TOKEN)
    disconnect = anyio.Event()

    def on_send(message: Message) -> None:
        if b"text_delta" in message.get("body", b""):
            disconnect.set()  # the client leaves after the first delta

    body = [{"type": "http.request", "body": json.dumps(BODY).encode()}]
    sent = await call_asgi(app, body, disconnect=disconnect, on_send=on_send)
    assert record.closed.is_set()
    assert record.aborted_at_close is True
    assert b"text_delta" in sent[-1]["body"]  # nothing was sent after the client left


async def test_a_send_that_fails_on_a_closed_connection_aborts_the_stream() -> None:
    record = Recorded()
    app = create_proxy_app(scripted(text_reply, record, hang=True), auth_token=TOKEN)

    def on_send(message: Message) -> None:
        if b"text_start" in message.get("body", b""):
            raise OSError("connection closed")

    body = [{"type": "http.request", "body": json.dumps(BODY).encode()}]
    await call_asgi(app, body, on_send=on_send)  # returns: nothing raised, nothing hangs
    assert record.closed.is_set()
    assert record.aborted_at_close is True


async def test_a_client_that_leaves_while_sending_the_body_gets_nothing() -> None:
    record = Recorded()
    app = create_proxy_app(scripted(text_reply, record), auth_token=TOKEN)
    gone = anyio.Event()
    gone.set()
    body = [{"type": "http.request", "body": b"{", "more_body": True}]
    assert await call_asgi(app, body, disconnect=gone) == []
    assert record.calls == []


async def test_the_lifespan_protocol_is_answered() -> None:
    app = create_proxy_app(auth_token=TOKEN)
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": "lifespan"}, receive, send)
    assert [message["type"] for message in sent] == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]


async def test_a_mounted_app_routes_below_its_root_path() -> None:
    app = create_proxy_app(scripted(every_event), auth_token=TOKEN)
    sent: list[Message] = []
    body = [{"type": "http.request", "body": json.dumps(BODY).encode()}]

    async def receive() -> Message:
        return body.pop(0) if body else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/llm/api/stream",
        "root_path": "/llm",
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode())],
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 200
