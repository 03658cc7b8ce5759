"""The OpenAI Responses provider: request mapping, stream mapping, endings and failures.

Wire fixtures follow the Responses API's documented streaming format: named events whose data
carries the same ``type`` and a ``sequence_number`` (``response.created``,
``response.output_item.added`` / ``.done``, ``response.reasoning_summary_*``,
``response.output_text.delta``, ``response.refusal.delta``,
``response.function_call_arguments.*``, ``response.completed`` / ``.incomplete`` / ``.failed``
and ``error``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import anyio
import attrs
import httpx
import pytest
from _replay_server import Reply, abort_after_first_text_delta, open_replay_server, split_awkwardly
from _stream_checks import collect, final_message, kinds

from pi_core import (
    AbortSignal,
    Agent,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Model,
    ModelCompat,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    stream_simple,
)
from pi_core import _http as http
from pi_core.providers import openai_responses

pytestmark = pytest.mark.anyio

MODEL = Model(
    "gpt-test",
    api="openai-responses",
    provider="openai",
    base_url="https://llm.example/v1",
    reasoning=True,
    input=("text", "image"),
    cost=ModelCost(input=1.0, output=10.0, cache_read=0.1),
)
CONTEXT = Context("Be brief.", [UserMessage("Weather in Paris?")])
OPTIONS = StreamOptions(api_key="sk-test")


# --- wire fixtures ------------------------------------------------------------------------------

_sequence = itertools.count()


def ev(kind: str, **fields: Any) -> bytes:
    """One named event; non-ASCII text stays raw UTF-8, as the API sends it."""
    data = json.dumps(
        {"type": kind, "sequence_number": next(_sequence), **fields}, ensure_ascii=False
    )
    return f"event: {kind}\ndata: {data}\n\n".encode()


def response(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "model": "gpt-test-2025",
        "status": status,
        **fields,
    }


def usage(input: int, output: int, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output,
    }


REASONING_ITEM = {
    "id": "rs_1",
    "type": "reasoning",
    "encrypted_content": "gAAAAABoEnc",
    "summary": [
        {"type": "summary_text", "text": "Need the weather."},
        {"type": "summary_text", "text": "Then answer."},
    ],
}


def reasoning(index: int = 0) -> list[bytes]:
    return [
        ev("response.output_item.added", output_index=index, item={"id": "rs_1", "type": "reasoning", "summary": []}),
        ev("response.reasoning_summary_part.added", item_id="rs_1", output_index=index, summary_index=0, part={"type": "summary_text", "text": ""}),
        ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=index, summary_index=0, delta="Need the "),
        ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=index, summary_index=0, delta="weather."),
        ev("response.reasoning_summary_text.done", item_id="rs_1", output_index=index, summary_index=0, text="Need the weather."),
        ev("response.reasoning_summary_part.done", item_id="rs_1", output_index=index, summary_index=0, part={"type": "summary_text", "text": "Need the weather."}),
        ev("response.reasoning_summary_part.added", item_id="rs_1", output_index=index, summary_index=1, part={"type": "summary_text", "text": ""}),
        ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=index, summary_index=1, delta="Then answer."),
        ev("response.output_item.done", output_index=index, item=REASONING_ITEM),
    ]  # fmt: skip


def message(
    index: int,
    *deltas: str,
    item_id: str = "msg_1",
    phase: str | None = None,
    part: str = "output_text",
) -> list[bytes]:
    text = "".join(deltas)
    delta_kind = "response.refusal.delta" if part == "refusal" else "response.output_text.delta"
    content = {"type": part, part if part == "refusal" else "text": text}
    done_item: dict[str, Any] = {
        "id": item_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [content],
    }
    if phase:
        done_item["phase"] = phase
    return [
        ev("response.output_item.added", output_index=index, item={"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}),
        ev("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part={"type": part, part if part == "refusal" else "text": ""}),
        *(ev(delta_kind, item_id=item_id, output_index=index, content_index=0, delta=d) for d in deltas),
        ev("response.output_item.done", output_index=index, item=done_item),
    ]  # fmt: skip


def function_call(
    index: int, call_id: str, item_id: str, name: str, *fragments: str
) -> list[bytes]:
    arguments = "".join(fragments)
    item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": name}
    return [
        ev("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""}),
        *(ev("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=f) for f in fragments),
        ev("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=arguments),
        ev("response.output_item.done", output_index=index, item={**item, "status": "completed", "arguments": arguments}),
    ]  # fmt: skip


def created() -> bytes:
    return ev("response.created", response=response("in_progress", output=[], usage=None))


def completed(usage_: dict[str, Any]) -> bytes:
    return ev("response.completed", response=response("completed", usage=usage_))


TOOL_BODY = [
    created(),
    ev("response.in_progress", response=response("in_progress")),
    *reasoning(0),
    *message(1, "Let me ", "check.", phase="commentary"),
    *function_call(2, "call_1", "fc_1", "get_weather", '{"city":', '"Paris"}'),
    completed(usage(100, 50, cached=40, reasoning=30)),
]
TEXT_BODY = [created(), *message(0, "Grüße ", "aus Paris 👋"), completed(usage(10, 5))]


async def run(
    lines: list[bytes],
    context: Context = CONTEXT,
    options: StreamOptions = OPTIONS,
    model: Model = MODEL,
) -> tuple[list[AssistantMessageEvent], httpx.Request]:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, content=b"".join(lines))

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        stream = openai_responses.stream_openai_responses(model, context, options, client=client)
        events = await collect(stream)
    assert len(seen) == 1
    return events, seen[0]


def sent(request: httpx.Request) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(request.content)
    return body


# --- the request --------------------------------------------------------------------------------


async def test_request_url_headers_and_body() -> None:
    options = StreamOptions(
        api_key="sk-test",
        reasoning="xhigh",
        temperature=0.2,
        max_tokens=256,
        session_id="session-7",
        headers={"X-Call": "c"},
    )
    context = Context(
        "Be brief.", [UserMessage("Hi")], [Tool("echo", "Echo it.", {"type": "object"})]
    )
    _, request = await run(TEXT_BODY, context, options)
    assert str(request.url) == "https://llm.example/v1/responses"
    assert (request.headers["authorization"], request.headers["x-call"]) == ("Bearer sk-test", "c")
    assert sent(request) == {
        "model": "gpt-test",
        "input": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        ],
        "stream": True,
        "store": False,
        "prompt_cache_key": "session-7",
        "max_output_tokens": 256,
        "temperature": 0.2,
        "tools": [
            {
                "type": "function",
                "name": "echo",
                "description": "Echo it.",
                "parameters": {"type": "object"},
            }
        ],
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high", "summary": "auto"},
    }


async def test_a_model_without_reasoning_gets_a_system_message_and_no_reasoning() -> None:
    model = Model("gpt-plain", api="openai-responses", provider="openai")
    options = StreamOptions(api_key="k", reasoning="high", cache_retention="long", session_id="s")
    _, request = await run(TEXT_BODY, options=options, model=model)
    body = sent(request)
    assert str(request.url) == "https://api.openai.com/v1/responses"
    assert body["input"][0] == {"role": "system", "content": "Be brief."}
    assert "reasoning" not in body and "include" not in body
    assert body["prompt_cache_retention"] == "24h"


@pytest.mark.parametrize("level", [None, "off"])
@pytest.mark.parametrize(
    ("levels", "reasoning"),
    [
        (None, {"effort": "none"}),  # unasked, a reasoning model reasons: "off" is said
        ({"off": "minimal"}, {"effort": "minimal"}),  # in the model's own word for it
        ({"off": None}, None),  # a model that always reasons is not told to stop
    ],
)
async def test_a_request_without_reasoning_says_off_and_asks_for_no_encrypted_reasoning(
    level: Any, levels: dict[str, Any] | None, reasoning: dict[str, str] | None
) -> None:
    model = attrs.evolve(MODEL, thinking_level_map=levels)
    options = StreamOptions(api_key="k", reasoning=level)
    _, request = await run(TEXT_BODY, options=options, model=model)
    body = sent(request)
    assert "include" not in body
    assert body.get("reasoning") == reasoning


@pytest.mark.parametrize(
    ("level", "levels", "effort"),
    [
        ("medium", None, "medium"),
        ("xhigh", None, "high"),  # xhigh only where the map names it
        ("xhigh", {"xhigh": "max"}, "max"),  # in the map's word
        ("minimal", {"off": "none", "minimal": None}, "low"),  # the nearest stronger level
        ("max", {"xhigh": "xhigh", "max": None}, "xhigh"),  # else the nearest weaker one
    ],
)
async def test_a_level_the_model_lacks_asks_for_the_nearest_it_has(
    level: Any, levels: dict[str, Any] | None, effort: str
) -> None:
    model = attrs.evolve(MODEL, thinking_level_map=levels)
    _, request = await run(
        TEXT_BODY, options=StreamOptions(api_key="k", reasoning=level), model=model
    )
    assert sent(request)["reasoning"] == {"effort": effort, "summary": "auto"}


async def test_session_headers_and_compat_settings() -> None:
    options = StreamOptions(api_key="k", session_id="s-1", cache_retention="long")
    _, request = await run(TEXT_BODY, options=options)
    assert (request.headers["session-id"], request.headers["x-client-request-id"]) == ("s-1", "s-1")
    assert sent(request)["prompt_cache_retention"] == "24h"
    compat = ModelCompat(send_session_id_header=False, supports_long_cache_retention=False)
    _, request = await run(TEXT_BODY, options=options, model=attrs.evolve(MODEL, compat=compat))
    assert "session-id" not in request.headers and request.headers["x-client-request-id"] == "s-1"
    assert "prompt_cache_retention" not in sent(request)


async def test_a_long_session_id_is_cut_to_the_cache_key_openai_takes() -> None:
    options = StreamOptions(api_key="k", session_id="s" * 80)
    _, request = await run(TEXT_BODY, options=options)
    assert sent(request)["prompt_cache_key"] == "s" * 64
    assert request.headers["session-id"] == "s" * 80  # the header keeps the whole id


@pytest.mark.parametrize(
    ("provider", "affinity", "headers"),
    [
        ("openai", None, {"session-id", "x-client-request-id"}),
        ("openrouter", None, {"x-session-id"}),
        ("opencode", "openai-nosession", {"x-client-request-id"}),
        ("openai", "openrouter", {"x-session-id"}),
    ],
)
async def test_the_session_id_routes_to_one_cache_in_the_servers_own_headers(
    provider: str, affinity: Any, headers: set[str]
) -> None:
    model = attrs.evolve(
        MODEL, provider=provider, compat=ModelCompat(session_affinity_format=affinity)
    )
    _, request = await run(
        TEXT_BODY, options=StreamOptions(api_key="k", session_id="s"), model=model
    )
    affinity_headers = {"session-id", "x-client-request-id", "x-session-id"}
    assert {name for name in request.headers if name in affinity_headers} == headers
    assert all(request.headers[name] == "s" for name in headers)


def test_the_catalogue_gives_opencode_its_affinity_format() -> None:
    from pi_core.models import get_model

    compat = get_model("opencode", "gpt-5").compat
    assert compat is not None and compat.session_affinity_format == "openai-nosession"


@pytest.mark.parametrize(("provider", "include"), [("xai", True), ("openai", False)])
async def test_xai_reasoning_models_always_ask_for_their_reasoning_back(
    provider: str, include: bool
) -> None:
    model = attrs.evolve(MODEL, provider=provider)
    _, request = await run(TEXT_BODY, model=model)  # no thinking level asked for
    assert ("include" in sent(request)) is include


async def test_no_cache_key_when_caching_is_off() -> None:
    options = StreamOptions(api_key="k", session_id="s", cache_retention="none")
    _, request = await run(TEXT_BODY, options=options)
    assert "prompt_cache_key" not in sent(request) and "session-id" not in request.headers


async def test_the_reply_goes_back_as_the_items_it_came_from() -> None:
    events, _ = await run(TOOL_BODY)
    reply = final_message(events)
    context = Context(
        None,
        [
            UserMessage([TextContent("Weather?"), ImageContent("aGk=", "image/png")]),
            reply,
            ToolResultMessage("call_1|fc_1", "get_weather", [TextContent("Sunny"), ImageContent("aGk=", "image/png")]),
        ],
    )  # fmt: skip
    _, request = await run(TEXT_BODY, context)
    image = {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,aGk="}
    assert sent(request)["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}, image]},
        REASONING_ITEM,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}],
            "status": "completed",
            "id": "msg_1",
            "phase": "commentary",
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "id": "fc_1",
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [{"type": "input_text", "text": "Sunny"}, image],
        },
    ]


def other(
    *content: TextContent | ThinkingContent | ToolCall, stop: str = "toolUse"
) -> AssistantMessage:
    return AssistantMessage(list(content), "anthropic-messages", "anthropic", "claude-x", stop_reason="toolUse" if stop == "toolUse" else "stop")  # fmt: skip


async def test_another_models_turn_continues_here() -> None:
    foreign = other(
        ThinkingContent("Thinking in Claude.", "sig"),
        TextContent("One."),
        TextContent("Two."),
        ToolCall("toolu_01/x", "get_weather", {"city": "Paris"}),
        ToolCall("call_9|fc_9", "get_time", {}),
    )
    context = Context(None, [UserMessage("Go"), foreign, UserMessage("And?")])
    _, request = await run(TEXT_BODY, context)
    items = sent(request)["input"][1:-1]
    texts = [item for item in items if item.get("type") == "message"]
    # Claude's thinking is dropped, its texts are items of their own
    assert [item["content"][0]["text"] for item in texts] == ["One.", "Two."]
    assert len({item["id"] for item in texts}) == 2  # never one id for two items
    calls = [item for item in items if item.get("type") == "function_call"]
    assert [(call["call_id"], "id" in call) for call in calls] == [
        ("toolu_01_x", False),
        ("call_9", False),
    ]
    outputs = [item for item in items if item.get("type") == "function_call_output"]
    assert [(out["call_id"], out["output"]) for out in outputs] == [
        ("toolu_01_x", "No result provided"),
        ("call_9", "No result provided"),
    ]


async def test_own_items_never_share_an_id_and_long_ids_are_shortened() -> None:
    signature = '{"v":1,"id":"msg_same"}'
    own = AssistantMessage(
        [
            TextContent("A", signature),
            TextContent("B", signature),
            TextContent("C", "x" * 90),
            TextContent("D"),
            ThinkingContent("", json.dumps({"type": "reasoning", "id": "rs_9", "summary": []})),
        ],
        "openai-responses",
        "openai",
        "gpt-test",
    )
    _, request = await run(TEXT_BODY, Context(None, [UserMessage("Hi"), own, UserMessage("More")]))
    items = sent(request)["input"][1:-1]
    ids = [item["id"] for item in items]
    assert len(set(ids)) == 4 and ids[0] == "msg_same"
    assert all(len(item_id) <= 64 for item_id in ids)
    assert all(item["type"] == "message" for item in items)  # the trailing reasoning item went


async def test_failed_replies_are_not_sent_and_results_without_a_call_are_dropped() -> None:
    failed = AssistantMessage([ToolCall("call_1|fc_1", "t", {})], "openai-responses", "openai", "gpt-test", stop_reason="error", error_message="x")  # fmt: skip
    orphan = ToolResultMessage("call_1|fc_1", "t", [TextContent("late")])
    _, request = await run(TEXT_BODY, Context(None, [UserMessage("Hi"), failed, orphan]))
    assert sent(request)["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}
    ]


# --- the response -------------------------------------------------------------------------------


async def test_reasoning_text_and_a_tool_call() -> None:
    events, _ = await run(TOOL_BODY)
    assert kinds(events) == [
        "start",
        "thinking_start", *["thinking_delta"] * 4, "thinking_end",
        "text_start", "text_delta", "text_delta", "text_end",
        "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end",
        "done",
    ]  # fmt: skip
    reply = final_message(events)
    thinking, text, call = reply.content
    assert thinking == ThinkingContent(
        "Need the weather.\n\nThen answer.", json.dumps(REASONING_ITEM, separators=(",", ":"))
    )
    assert text == TextContent("Let me check.", '{"v":1,"id":"msg_1","phase":"commentary"}')
    assert call == ToolCall("call_1|fc_1", "get_weather", {"city": "Paris"})
    assert (reply.stop_reason, reply.response_id, reply.response_model) == (
        "toolUse",
        "resp_1",
        "gpt-test-2025",
    )
    assert (reply.usage.input, reply.usage.cache_read, reply.usage.output) == (60, 40, 50)
    assert reply.usage.total_tokens == 150
    assert reply.usage.cost.total == pytest.approx((60 * 1.0 + 40 * 0.1 + 50 * 10.0) / 1e6)


async def test_a_refusal_is_text() -> None:
    body = [
        created(),
        *message(0, "I can't ", "help with that.", part="refusal"),
        completed(usage(5, 4)),
    ]
    events, _ = await run(body)
    reply = final_message(events)
    assert reply.content == [TextContent("I can't help with that.", '{"v":1,"id":"msg_1"}')]
    assert reply.stop_reason == "stop"


async def test_items_without_deltas_still_bring_their_content() -> None:
    call = {
        "id": "fc_2",
        "type": "function_call",
        "call_id": "call_2",
        "name": "t",
        "arguments": '{"a": 1}',
    }
    text = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Done."}],
    }
    body = [
        created(),
        ev("response.output_item.added", output_index=0, item={**text, "content": []}),
        ev("response.output_item.done", output_index=0, item=text),
        ev("response.output_item.done", output_index=1, item=call),  # never announced
        completed(usage(1, 1)),
    ]  # fmt: skip
    events, _ = await run(body)
    reply = final_message(events)
    assert reply.content[0] == TextContent("Done.", '{"v":1,"id":"msg_2"}')
    assert reply.content[1] == ToolCall("call_2|fc_2", "t", {"a": 1})


async def test_incomplete_for_max_output_tokens_is_length_with_usage() -> None:
    ending = ev(
        "response.incomplete",
        response=response("incomplete", incomplete_details={"reason": "max_output_tokens"}, usage=usage(30, 16, reasoning=12)),
    )  # fmt: skip
    events, _ = await run([created(), *message(0, "Cut"), ending])
    reply = final_message(events)
    assert kinds(events)[-1] == "done"
    assert (reply.stop_reason, reply.usage.input, reply.usage.output) == ("length", 30, 16)
    assert reply.content == [TextContent("Cut", '{"v":1,"id":"msg_1"}')]


async def test_incomplete_for_content_filter_is_an_error_with_usage() -> None:
    ending = ev(
        "response.incomplete",
        response=response("incomplete", incomplete_details={"reason": "content_filter"}, usage=usage(30, 2)),
    )  # fmt: skip
    events, _ = await run([created(), ending])
    reply = final_message(events)
    assert (reply.stop_reason, reply.usage.input) == ("error", 30)
    assert reply.error_message == "Response incomplete: content_filter"


async def test_failed_response_names_the_error_and_keeps_usage_and_content() -> None:
    failure = response(
        "failed",
        error={"code": "server_error", "message": "The server had an error."},
        usage=usage(7, 3),
    )
    events, _ = await run([created(), *message(0, "Part"), ev("response.failed", response=failure)])
    reply = final_message(events)
    assert kinds(events)[-1] == "error"
    assert reply.error_message == "server_error: The server had an error."
    assert (reply.usage.input, reply.content) == (7, [TextContent("Part", '{"v":1,"id":"msg_1"}')])


async def test_error_event_mid_stream() -> None:
    error = ev("error", code="rate_limit_exceeded", message="Slow down.", param=None)
    events, _ = await run([created(), *message(0, "Hi")[:3], error])
    reply = final_message(events)
    assert (reply.stop_reason, reply.error_message) == ("error", "rate_limit_exceeded: Slow down.")
    assert reply.content == [TextContent("Hi")]


async def test_a_stream_without_its_ending_is_an_error() -> None:
    events, _ = await run([created(), *message(0, "All done?")])
    reply = final_message(events)
    assert reply.error_message == "OpenAI Responses stream ended before a terminal response event"
    assert reply.content == [TextContent("All done?", '{"v":1,"id":"msg_1"}')]


async def test_register_serves_stream_simple(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b"".join(TEXT_BODY)
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        openai_responses.register(client=client)
        try:
            stream = stream_simple(MODEL, CONTEXT)
            assert not isinstance(stream, Awaitable)
            events = await collect(stream)
        finally:
            openai_responses.unregister()
    assert final_message(events).content[0].type == "text"
    assert seen[0].headers["authorization"] == "Bearer sk-env"


# --- against a real HTTP server -----------------------------------------------------------------


def served(base_url: str) -> Model:
    return attrs.evolve(MODEL, base_url=base_url)


@pytest.mark.parametrize("sizes", [(1,), (2, 3), (7, 1, 13), (64,)])
async def test_served_bodies_cut_anywhere_read_the_same(
    anyio_backend: str, sizes: tuple[int, ...]
) -> None:
    whole = final_message((await run(TOOL_BODY))[0])
    body = [*TOOL_BODY[:-1], *message(3, "Grüße ", "👋", item_id="msg_2"), TOOL_BODY[-1]]
    async with open_replay_server(
        [Reply(chunks=split_awkwardly(body, sizes))], anyio_backend
    ) as server:
        events = await collect(
            openai_responses.stream_openai_responses(served(server.base_url), CONTEXT, OPTIONS)
        )
        assert server.requests[0].path == "/responses"
    reply = final_message(events)
    assert reply.content[:3] == whole.content
    assert reply.content[3] == TextContent("Grüße 👋", '{"v":1,"id":"msg_2"}')
    assert (reply.usage, reply.stop_reason) == (whole.usage, "toolUse")


async def test_served_abort_mid_stream_disconnects(anyio_backend: str) -> None:
    def start(url: str, signal: AbortSignal) -> AsyncIterator[AssistantMessageEvent]:
        return openai_responses.stream_openai_responses(
            served(url), CONTEXT, StreamOptions(api_key="k", signal=signal)
        )

    events = await abort_after_first_text_delta(
        [created(), *message(0, "Hel")[:3]], anyio_backend, start
    )
    reply = final_message(events)
    assert (reply.stop_reason, reply.error_message) == ("aborted", "Request was aborted")
    assert reply.content == [TextContent("Hel")]


async def test_served_error_status(anyio_backend: str) -> None:
    payload = {
        "error": {
            "message": "Incorrect API key provided",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    reply = Reply(401, [json.dumps(payload).encode()], content_type="application/json")
    async with open_replay_server([reply], anyio_backend) as server:
        events = await collect(
            openai_responses.stream_openai_responses(served(server.base_url), CONTEXT, OPTIONS)
        )
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == "401 Unauthorized: Incorrect API key provided"


async def test_served_overload_is_retried(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    async def wait(delay: float) -> None:  # the backoff, recorded instead of slept
        waits.append(delay)

    monkeypatch.setattr(http, "_sleep", wait)
    busy = Reply(503, [b'{"error": {"message": "overloaded"}}'], content_type="application/json")
    async with open_replay_server([busy, Reply(chunks=TEXT_BODY)], anyio_backend) as server:
        events = await collect(
            openai_responses.stream_openai_responses(served(server.base_url), CONTEXT, OPTIONS)
        )
        assert len(server.requests) == 2
    assert kinds(events)[0] == "start" and final_message(events).stop_reason == "stop"
    assert len(waits) == 1


async def test_an_agent_given_a_model_name_streams_from_it(anyio_backend: str) -> None:
    agent = Agent(model="openai/gpt-4o-mini", options=OPTIONS)
    assert (agent.model.api, agent.model.id) == ("openai-responses", "gpt-4o-mini")
    async with open_replay_server([Reply(chunks=TEXT_BODY)], anyio_backend) as server:
        agent.model = attrs.evolve(agent.model, base_url=server.base_url)
        with anyio.fail_after(10):
            result = await agent.prompt("Weather in Paris?")
        assert server.requests[0].body["model"] == "gpt-4o-mini"
    assert result.error_message is None
    assert result.text == "Grüße aus Paris 👋"
