"""The Gemini provider: request mapping, thinking settings, stream mapping, finish reasons.

Wire fixtures follow the Gemini API's documented ``streamGenerateContent?alt=sse`` format:
``data:`` lines of ``GenerateContentResponse`` JSON ending in CRLF pairs, with ``candidates``
(``content.parts``, ``finishReason``), ``usageMetadata``, ``modelVersion`` and ``responseId``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import attrs
import httpx
import pytest
from _replay_server import Reply, abort_after_first_text_delta, open_replay_server, split_awkwardly
from _stream_checks import collect, final_message, kinds

from pi_core import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolResultMessage,
    UserMessage,
    stream_simple,
)
from pi_core import _http as http
from pi_core.models import ModelNotFoundError, get_model
from pi_core.providers import google
from pi_core.providers._google_convert import SKIP_SIGNATURE

pytestmark = pytest.mark.anyio

MODEL = Model(
    "gemini-2.5-flash",
    api="google-generative-ai",
    provider="google",
    base_url="https://llm.example/v1beta",
    reasoning=True,
    input=("text", "image"),
    cost=ModelCost(input=0.3, output=2.5, cache_read=0.03),
)
GEMINI_3 = attrs.evolve(MODEL, id="gemini-3-pro-preview")
CONTEXT = Context("Be brief.", [UserMessage("Weather in Paris?")])
OPTIONS = StreamOptions(api_key="gm-test")
SIG_A, SIG_B, SIG_C = "c2lnLWE=", "c2lnLWI=", "c2lnLWM="


# --- wire fixtures ------------------------------------------------------------------------------


def chunk(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    data = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash-001",
        "responseId": "r-1",
        **extra,
    }
    return f"data: {json.dumps(data, ensure_ascii=False)}\r\n\r\n".encode()


def usage(prompt: int, candidates: int, cached: int = 0, thoughts: int = 0) -> dict[str, Any]:
    meta = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if cached:
        meta["cachedContentTokenCount"] = cached
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    return {"usageMetadata": meta}


def call(
    name: str, args: dict[str, Any], call_id: str | None = None, signature: str | None = None
) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        function["id"] = call_id
    part: dict[str, Any] = {"functionCall": function}
    if signature:
        part["thoughtSignature"] = signature
    return part


TOOL_BODY = [
    chunk({"text": "Need the ", "thought": True}),
    chunk({"text": "weather.", "thought": True, "thoughtSignature": SIG_A}),
    chunk({"text": "Checking "}, {"text": "now.", "thoughtSignature": SIG_B}),
    chunk(
        call("get_weather", {"city": "Paris"}, signature=SIG_C),
        call("get_time", {"tz": "Europe/Paris"}, call_id="t-1"),
        call("get_time", {"tz": "UTC"}, call_id="t-1"),  # the id is taken: a new one is made
        finish="STOP",
        **usage(100, 20, cached=40, thoughts=30),
    ),
]
TEXT_BODY = [
    chunk({"text": "Grüße "}),
    chunk({"text": "aus Paris 👋"}, finish="STOP", **usage(10, 5)),
]


async def run(
    lines: list[bytes],
    context: Context = CONTEXT,
    options: StreamOptions = OPTIONS,
    model: Model = MODEL,
) -> tuple[list[AssistantMessageEvent], httpx.Request]:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b"".join(lines)
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        events = await collect(google.stream_google(model, context, options, client=client))
    assert len(seen) == 1
    return events, seen[0]


def sent(request: httpx.Request) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(request.content)
    return body


# --- the request --------------------------------------------------------------------------------


async def test_request_url_headers_and_body() -> None:
    tool = Tool("echo", "Echo it.", {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"text": {"type": "string", "const": "hi"}}, "required": ["text", "ghost"]})  # fmt: skip
    options = StreamOptions(api_key="gm-test", reasoning="medium", temperature=0.3, max_tokens=500, headers={"X-Call": "c"})  # fmt: skip
    _, request = await run(TEXT_BODY, Context("Be brief.", [UserMessage("Hi")], [tool]), options)
    assert (
        str(request.url)
        == "https://llm.example/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert (request.headers["x-goog-api-key"], request.headers["x-call"]) == ("gm-test", "c")
    assert sent(request) == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}], "role": "user"},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "echo",
                        "description": "Echo it.",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"text": {"type": "string", "enum": ["hi"]}},
                            "required": ["text"],
                        },
                    }
                ]
            }
        ],
        "generationConfig": {
            "temperature": 0.3,
            "maxOutputTokens": 500,
            "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192},
        },
    }  # fmt: skip


@pytest.mark.parametrize(
    ("model_id", "level", "expected"),
    [
        ("gemini-2.5-flash", None, {"thinkingBudget": 0}),
        ("gemini-2.5-pro", None, None),
        ("gemini-2.5-pro", "minimal", {"includeThoughts": True, "thinkingBudget": 128}),
        ("gemini-2.5-flash-lite", "minimal", {"includeThoughts": True, "thinkingBudget": 512}),
        ("gemini-2.5-flash", "xhigh", {"includeThoughts": True, "thinkingBudget": 24576}),
        ("gemini-exp", "low", {"includeThoughts": True, "thinkingBudget": -1}),
        # Gemini 3 and later take a level, and the catalogue's map says which: these always
        # think (off is their lowest level), and 3.1 Pro has no minimal.
        ("gemini-3.1-pro-preview", None, {"thinkingLevel": "LOW"}),
        ("gemini-3.1-pro-preview", "minimal", {"includeThoughts": True, "thinkingLevel": "LOW"}),
        ("gemini-3.1-pro-preview", "xhigh", {"includeThoughts": True, "thinkingLevel": "HIGH"}),
        ("gemini-3-flash-preview", "off", {"thinkingLevel": "MINIMAL"}),
        ("gemini-3-flash-preview", "medium", {"includeThoughts": True, "thinkingLevel": "MEDIUM"}),
        ("gemma-4-by-hand", None, {"thinkingBudget": 0}),  # no map: it may stop thinking
    ],
)
async def test_thinking_settings(
    model_id: str, level: ThinkingLevel | None, expected: dict[str, Any] | None
) -> None:
    levels = catalogue_levels(model_id)
    model = attrs.evolve(MODEL, id=model_id, thinking_level_map=levels)
    options = StreamOptions(api_key="k", reasoning=level)
    _, request = await run(TEXT_BODY, options=options, model=model)
    assert sent(request).get("generationConfig", {}).get("thinkingConfig") == expected


def catalogue_levels(model_id: str) -> dict[str, str | None] | None:
    """The catalogue's thinking-level map of a Gemini model (none for one it lacks)."""
    try:
        return get_model("google", model_id).thinking_level_map
    except ModelNotFoundError:
        return None


async def test_a_map_word_gemini_does_not_take_is_a_clear_error() -> None:
    model = attrs.evolve(MODEL, id="gemini-3-flash-preview", thinking_level_map={"high": "max"})
    with pytest.raises(ValueError, match="maps thinking level 'high' to 'max', which Gemini"):
        google._body(model, Context(None, [UserMessage("hi")]), StreamOptions(reasoning="high"))


async def test_budget_overrides_and_models_without_reasoning() -> None:
    options = StreamOptions(api_key="k", reasoning="low", thinking_budgets={"low": 777})
    _, request = await run(TEXT_BODY, options=options)
    assert sent(request)["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 777
    plain = attrs.evolve(MODEL, reasoning=False)
    _, request = await run(TEXT_BODY, options=options, model=plain)
    assert "generationConfig" not in sent(request)


async def test_the_reply_goes_back_with_its_signatures_and_one_turn_of_results() -> None:
    reply = final_message((await run(TOOL_BODY))[0])
    weather, time_1, time_2 = (block.id for block in reply.content if isinstance(block, ToolCall))
    image = ImageContent("aGk=", "image/png")
    context = Context(
        None,
        [
            UserMessage("Weather?"),
            reply,
            ToolResultMessage(weather, "get_weather", [TextContent("Sunny"), image]),
            ToolResultMessage(time_2, "get_time", [TextContent("bad tz")], is_error=True),
            ToolResultMessage(time_1, "get_time", [image]),
            UserMessage("Thanks"),
        ],
    )
    _, request = await run(TEXT_BODY, context)
    inline = {"inlineData": {"mimeType": "image/png", "data": "aGk="}}
    assert sent(request)["contents"] == [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {
            "role": "model",
            "parts": [
                {"thought": True, "text": "Need the weather.", "thoughtSignature": SIG_A},
                {"text": "Checking now.", "thoughtSignature": SIG_B},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIG_C},
                {"functionCall": {"name": "get_time", "args": {"tz": "Europe/Paris"}}},
                {"functionCall": {"name": "get_time", "args": {"tz": "UTC"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "Sunny"}}},
                {"functionResponse": {"name": "get_time", "response": {"output": "(see attached image)"}}},
                {"functionResponse": {"name": "get_time", "response": {"error": "bad tz"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "Tool result image:"}, inline, inline]},
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]  # fmt: skip


async def test_gemini_3_takes_tool_images_inline() -> None:
    own = AssistantMessage([ToolCall("c1", "shot", {}, "c2lnLXg=")], "google-generative-ai", "google", GEMINI_3.id, stop_reason="toolUse")  # fmt: skip
    result = ToolResultMessage("c1", "shot", [ImageContent("aGk=", "image/png")])
    _, request = await run(
        TEXT_BODY, Context(None, [UserMessage("Go"), own, result]), model=GEMINI_3
    )
    response = sent(request)["contents"][2]["parts"][0]["functionResponse"]
    assert response["parts"] == [{"inlineData": {"mimeType": "image/png", "data": "aGk="}}]


async def test_another_models_turn_continues_here() -> None:
    foreign = AssistantMessage(
        [
            ThinkingContent("Claude thinks.", "anthropic-signature"),
            TextContent("Calling.", '{"v":1,"id":"msg_1"}'),
            ToolCall("call_1|fc_1", "get_time", {}, thought_signature="Zm9yZWlnbg=="),
            ToolCall("toolu_2", "get_time", {"tz": "UTC"}),
        ],
        "anthropic-messages",
        "anthropic",
        "claude-x",
        stop_reason="toolUse",
    )
    context = Context(None, [UserMessage("Go"), foreign, UserMessage("Next")])
    _, request = await run(TEXT_BODY, context, model=GEMINI_3)
    model_turn, answers = sent(request)["contents"][1:3]
    assert model_turn["parts"] == [  # Claude's thinking is dropped
        {"text": "Calling."},
        {"functionCall": {"name": "get_time", "args": {}}, "thoughtSignature": SKIP_SIGNATURE},
        {"functionCall": {"name": "get_time", "args": {"tz": "UTC"}}},
    ]
    assert [part["functionResponse"]["response"] for part in answers["parts"]] == [
        {"error": "No result provided"},
        {"error": "No result provided"},
    ]


# --- the response -------------------------------------------------------------------------------


async def test_thinking_text_and_several_calls_in_one_chunk() -> None:
    events, _ = await run(TOOL_BODY)
    assert kinds(events) == [
        "start",
        "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_delta", "text_end",
        *["toolcall_start", "toolcall_delta", "toolcall_end"] * 3,
        "done",
    ]  # fmt: skip
    reply = final_message(events)
    thinking, text, weather, time_1, time_2 = reply.content
    assert thinking == ThinkingContent("Need the weather.", SIG_A)
    assert text == TextContent("Checking now.", SIG_B)
    assert (
        isinstance(weather, ToolCall)
        and isinstance(time_1, ToolCall)
        and isinstance(time_2, ToolCall)
    )
    assert (weather.name, weather.arguments, weather.thought_signature) == (
        "get_weather",
        {"city": "Paris"},
        SIG_C,
    )
    assert time_1.id == "t-1" and time_2.arguments == {"tz": "UTC"}
    assert len({weather.id, time_1.id, time_2.id}) == 3 and weather.id
    # Each call's arguments arrive whole, as one delta of compact JSON (as JSON.stringify
    # writes it, so a consumer sees what the TypeScript original shows).
    deltas = [event.delta for event in events if isinstance(event, ToolCallDelta)]
    assert deltas == ['{"city":"Paris"}', '{"tz":"Europe/Paris"}', '{"tz":"UTC"}']
    assert (reply.stop_reason, reply.response_id, reply.response_model) == (
        "toolUse",
        "r-1",
        "gemini-2.5-flash-001",
    )
    assert (reply.usage.input, reply.usage.cache_read, reply.usage.output) == (60, 40, 50)
    assert reply.usage.cost.total == pytest.approx((60 * 0.3 + 40 * 0.03 + 50 * 2.5) / 1e6)


async def test_max_tokens_is_length() -> None:
    events, _ = await run([chunk({"text": "Cut"}, finish="MAX_TOKENS", **usage(3, 8))])
    reply = final_message(events)
    assert (kinds(events)[-1], reply.stop_reason, reply.usage.output) == ("done", "length", 8)


@pytest.mark.parametrize(
    "reason",
    ["SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL", "MISSING_THOUGHT_SIGNATURE", "OTHER"],
)
async def test_other_finish_reasons_are_named_errors_with_usage(reason: str) -> None:
    events, _ = await run([chunk({"text": "Part"}), chunk(finish=reason, **usage(12, 3))])
    reply = final_message(events)
    assert kinds(events)[-1] == "error"
    assert reply.error_message == f"Provider stopped with: {reason}"
    assert (reply.usage.input, reply.content) == (12, [TextContent("Part")])


async def test_a_finish_message_is_part_of_the_error() -> None:
    candidate = {
        "finishReason": "MALFORMED_FUNCTION_CALL",
        "finishMessage": "Malformed function call: print(",
    }
    ending = f"data: {json.dumps({'candidates': [candidate]})}\r\n\r\n".encode()
    reply = final_message((await run([ending]))[0])
    assert reply.error_message == (
        "Provider stopped with: MALFORMED_FUNCTION_CALL: Malformed function call: print("
    )


async def test_an_error_sent_after_the_status_is_surfaced() -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    lines = [chunk({"text": "Hal"}), f"data: {json.dumps(error)}\r\n\r\n".encode()]
    reply = final_message((await run(lines))[0])
    assert (reply.stop_reason, reply.error_message) == (
        "error",
        "UNAVAILABLE: The model is overloaded.",
    )
    assert reply.content == [TextContent("Hal")]


async def test_a_blocked_prompt_is_an_error() -> None:
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, **usage(9, 0)}
    reply = final_message((await run([f"data: {json.dumps(blocked)}\r\n\r\n".encode()]))[0])
    assert (
        reply.error_message == "The provider blocked the prompt (blockReason: PROHIBITED_CONTENT)"
    )
    assert reply.usage.input == 9


async def test_a_stream_without_a_finish_reason_is_an_error() -> None:
    reply = final_message((await run([chunk({"text": "And then"})]))[0])
    assert (reply.stop_reason, reply.error_message) == (
        "error",
        "Google stream ended without a finish reason",
    )
    assert reply.content == [TextContent("And then")]


async def test_a_trailing_signature_part_joins_the_text() -> None:
    lines = [
        chunk({"text": "Done."}),
        chunk({"text": "", "thoughtSignature": SIG_A}, finish="STOP"),
    ]
    reply = final_message((await run(lines))[0])
    assert reply.content == [TextContent("Done.", SIG_A)]


async def test_register_serves_stream_simple(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gm-env")
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b"".join(TEXT_BODY)
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        google.register(client=client)
        try:
            stream = stream_simple(MODEL, CONTEXT)
            assert not isinstance(stream, Awaitable)
            events = await collect(stream)
        finally:
            google.unregister()
    assert final_message(events).content == [TextContent("Grüße aus Paris 👋")]
    assert seen[0].headers["x-goog-api-key"] == "gm-env"


# --- against a real HTTP server -----------------------------------------------------------------


def served(base_url: str) -> Model:
    return attrs.evolve(MODEL, base_url=base_url)


@pytest.mark.parametrize("sizes", [(1,), (2, 3), (7, 1, 13), (64,)])
async def test_served_bodies_cut_anywhere_read_the_same(
    anyio_backend: str, sizes: tuple[int, ...]
) -> None:
    whole = final_message((await run(TOOL_BODY))[0])
    body = [*TEXT_BODY[:1], *TOOL_BODY]
    async with open_replay_server(
        [Reply(chunks=split_awkwardly(body, sizes))], anyio_backend
    ) as server:
        events = await collect(google.stream_google(served(server.base_url), CONTEXT, OPTIONS))
        assert server.requests[0].path == "/models/gemini-2.5-flash:streamGenerateContent"
    reply = final_message(events)
    assert reply.content[0] == TextContent("Grüße ")
    assert reply.content[1:3] == whole.content[:2]
    assert [(b.name, b.arguments) for b in reply.content[3:] if isinstance(b, ToolCall)] == [
        (b.name, b.arguments) for b in whole.content[2:] if isinstance(b, ToolCall)
    ]
    assert (reply.usage, reply.stop_reason) == (whole.usage, "toolUse")


async def test_served_abort_mid_stream_disconnects(anyio_backend: str) -> None:
    def start(url: str, signal: AbortSignal) -> AsyncIterator[AssistantMessageEvent]:
        return google.stream_google(served(url), CONTEXT, StreamOptions(api_key="k", signal=signal))

    events = await abort_after_first_text_delta(TEXT_BODY[:1], anyio_backend, start)
    reply = final_message(events)
    assert (reply.stop_reason, reply.error_message) == ("aborted", "Request was aborted")
    assert reply.content == [TextContent("Grüße ")]


async def test_served_error_status(anyio_backend: str) -> None:
    payload = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
        }
    }
    reply = Reply(400, [json.dumps(payload).encode()], content_type="application/json")
    async with open_replay_server([reply], anyio_backend) as server:
        events = await collect(google.stream_google(served(server.base_url), CONTEXT, OPTIONS))
    assert kinds(events) == ["error"]
    assert (
        final_message(events).error_message
        == "400 Bad Request: API key not valid. Please pass a valid API key."
    )


async def test_served_overload_is_retried(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    async def wait(delay: float) -> None:  # the backoff, recorded instead of slept
        waits.append(delay)

    monkeypatch.setattr(http, "_sleep", wait)
    busy = Reply(503, [b'{"error": {"message": "overloaded"}}'], content_type="application/json")
    async with open_replay_server([busy, Reply(chunks=TEXT_BODY)], anyio_backend) as server:
        events = await collect(google.stream_google(served(server.base_url), CONTEXT, OPTIONS))
        assert len(server.requests) == 2
    assert kinds(events)[0] == "start" and final_message(events).stop_reason == "stop"
    assert len(waits) == 1
