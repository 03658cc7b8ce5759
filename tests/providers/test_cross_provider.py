"""One conversation across all four HTTP providers, each request checked against its API's rules.

An agent run whose model changes every turn: OpenAI Chat Completions → Anthropic Messages →
OpenAI Responses → Gemini → Responses → Anthropic → Chat Completions, each turn reasoning and
calling a tool (Gemini calls two at once), against a real HTTP server on 127.0.0.1. Every
request must be one its API accepts (see ``_request_rules``), a model must get back its own
reasoning with its signatures, and the transcript must survive the JSON the TypeScript Pi reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from _replay_server import RecordedRequest, Reply, open_replay_server, sse_event
from _request_rules import (
    anthropic_problems,
    chat_completions_problems,
    gemini_problems,
    responses_problems,
)

from pi_core import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    Context,
    Message,
    Model,
    NextTurn,
    StreamOptions,
    ThinkingContent,
    ToolCall,
    TurnContext,
    UserMessage,
    run_agent_loop,
    serialization,
)
from pi_core._options import StreamResult
from pi_core.providers import anthropic, google, openai, openai_responses
from pi_core.testing import check_event_grammar, check_transcript

pytestmark = pytest.mark.anyio

ADD = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": ["number", "null"]}},
    "required": ["a", "b"],
}
STREAMS = {
    openai.API: openai.stream_openai,
    anthropic.API: anthropic.stream_anthropic,
    openai_responses.API: openai_responses.stream_openai_responses,
    google.API: google.stream_google,
}
CHAT, CLAUDE, RESPONSES, GEMINI = STREAMS
LONG = "_68b7a8e2c3d481a0b4f0c0d1e2f3a4b5c6d7e8f9a0b1c2d3"  # item ids are long: call_id|item_id passes 40


# --- one reply per API --------------------------------------------------------------------------


def chat_reply(reasoning: str, call: tuple[str, str] | None, text: str = "") -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse_event({"id": "c-1", "model": "gpt-chat", "choices": [choice]})

    lines = [chunk({"reasoning_content": reasoning})]
    if call:
        function = {"name": "add", "arguments": call[1]}
        lines.append(chunk({"tool_calls": [{"index": 0, "id": call[0], "type": "function", "function": function}]}))  # fmt: skip
    if text:
        lines.append(chunk({"content": text}))
    lines.append(chunk({}, "tool_calls" if call else "stop"))
    usage = {"prompt_tokens": 50, "completion_tokens": 9}
    return Reply(chunks=[*lines, sse_event({"choices": [], "usage": usage}), sse_event("[DONE]")])


def claude_reply(thinking: str, signature: str, call_id: str, arguments: str) -> Reply:
    def event(kind: str, **data: Any) -> bytes:
        return sse_event({"type": kind, **data}, event=kind)

    lines = [
        event("message_start", message={"id": "m-1", "model": "claude-x", "usage": {"input_tokens": 40, "output_tokens": 1}}),
        event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
        event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": thinking}),
        event("content_block_delta", index=0, delta={"type": "signature_delta", "signature": signature}),
        event("content_block_stop", index=0),
        event("content_block_start", index=1, content_block={"type": "tool_use", "id": call_id, "name": "add", "input": {}}),
        event("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": arguments}),
        event("content_block_stop", index=1),
        event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 20}),
        event("message_stop"),
    ]  # fmt: skip
    return Reply(chunks=lines)


def reasoning_item(number: int) -> dict[str, Any]:
    return {
        "id": f"rs_{number}",
        "type": "reasoning",
        "encrypted_content": f"gAAAAB-encrypted-{number}",
        "summary": [{"type": "summary_text", "text": f"Responses reasons ({number})."}],
    }


def responses_reply(number: int, arguments: str) -> Reply:
    def event(kind: str, **data: Any) -> bytes:
        return sse_event({"type": kind, **data}, event=kind)

    call = {
        "id": f"fc_{number}{LONG}",
        "type": "function_call",
        "call_id": f"call_r{number}",
        "name": "add",
    }
    item = reasoning_item(number)
    lines = [
        event("response.created", response={"id": f"resp_{number}", "status": "in_progress"}),
        event("response.output_item.added", output_index=0, item={**item, "summary": []}),
        event("response.output_item.done", output_index=0, item=item),
        event("response.output_item.added", output_index=1, item={**call, "arguments": ""}),
        event("response.function_call_arguments.delta", output_index=1, delta=arguments),
        event("response.output_item.done", output_index=1, item={**call, "arguments": arguments}),
        event("response.completed", response={"id": f"resp_{number}", "status": "completed", "usage": {"input_tokens": 80, "output_tokens": 30}}),
    ]  # fmt: skip
    return Reply(chunks=lines)


def gemini_reply() -> Reply:
    parts = [
        {"text": "Gemini plans two sums.", "thought": True, "thoughtSignature": "Z2VtaW5p"},
        {
            "functionCall": {"name": "add", "args": {"a": 10, "b": 1}},
            "thoughtSignature": "Y2FsbA==",
        },
        {"functionCall": {"name": "add", "args": {"a": 11, "b": 1}}},
    ]
    data = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 90, "candidatesTokenCount": 12},
    }
    return Reply(chunks=[f"data: {json.dumps(data)}\r\n\r\n".encode()])


REPLIES = [
    chat_reply("Chat plans.", ("call_c1", '{"a": 2, "b": 3}')),
    claude_reply("Claude checks.", "c2lnLWNsYXVkZQ==", "toolu_a1", '{"a": 5, "b": 1}'),
    responses_reply(1, '{"a": 6, "b": 4}'),
    gemini_reply(),
    responses_reply(2, '{"a": 12, "b": 6}'),
    claude_reply("Claude again.", "c2lnLWFnYWlu", "toolu_a2", '{"a": 18, "b": 0}'),
    chat_reply("Chat sums up.", None, "The total is 18."),
]
ORDER = [CHAT, CLAUDE, RESPONSES, GEMINI, RESPONSES, CLAUDE, CHAT]
RULES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    CHAT: chat_completions_problems,
    CLAUDE: anthropic_problems,
    RESPONSES: responses_problems,
    GEMINI: gemini_problems,
}


def models(base_url: str) -> dict[str, Model]:
    return {
        CHAT: Model("gpt-chat", api=CHAT, provider="openai", base_url=f"{base_url}/v1", reasoning=True),
        CLAUDE: Model("claude-x", api=CLAUDE, provider="anthropic", base_url=base_url, reasoning=True),
        RESPONSES: Model("gpt-resp", api=RESPONSES, provider="openai", base_url=f"{base_url}/v1", reasoning=True),
        GEMINI: Model("gemini-3-pro-preview", api=GEMINI, provider="google", base_url=f"{base_url}/v1beta", reasoning=True),
    }  # fmt: skip


def api_of(request: RecordedRequest) -> str:
    if request.path.endswith("/chat/completions"):
        return CHAT
    if request.path.endswith("/messages"):
        return CLAUDE
    return RESPONSES if request.path.endswith("/responses") else GEMINI


def dispatch(model: Model, context: Context, options: StreamOptions) -> StreamResult:
    return STREAMS[model.api](model, context, options)


async def add(tool_call_id: str, params: Any, signal: object, on_update: object) -> str:
    return str(params["a"] + (params["b"] or 0))


async def test_a_conversation_across_four_apis_and_back(anyio_backend: str) -> None:
    events: list[AgentEvent] = []
    async with open_replay_server(REPLIES, anyio_backend) as server:
        by_api = models(server.base_url)
        turns = iter(ORDER[1:])

        def next_model(turn: TurnContext) -> NextTurn | None:
            api = next(turns, None)  # called after the last turn too
            return NextTurn(model=by_api[api]) if api else None

        config = AgentLoopConfig(
            by_api[CHAT],
            stream_fn=dispatch,
            prepare_next_turn=next_model,
            options=StreamOptions(api_key="k", reasoning="low", cache_retention="none"),
        )
        tools = [AgentTool("add", "Add two numbers.", ADD, add)]
        with anyio.fail_after(20):
            new = await run_agent_loop(
                [UserMessage("Add it all up.")],
                AgentContext("Be exact.", [], tools),
                config,
                events.append,
            )
        requests = server.requests
    check_event_grammar(events)
    assert [api_of(request) for request in requests] == ORDER
    for number, request in enumerate(requests):
        assert RULES[api_of(request)](request.body) == [], f"request {number} ({request.path})"
    assert_own_reasoning_went_back(requests)
    assert_transcript_survives_json(new)


def assert_own_reasoning_went_back(requests: list[RecordedRequest]) -> None:
    responses_again = requests[4].body["input"]
    assert reasoning_item(1) in responses_again
    own_call = next(item for item in responses_again if item.get("call_id") == "call_r1")
    assert own_call["id"] == f"fc_1{LONG}"
    foreign_calls = [item for item in responses_again if item.get("type") == "function_call"]
    assert all("id" not in item for item in foreign_calls if item["call_id"] != "call_r1")
    claude_again = requests[5].body["messages"]
    assert {"type": "thinking", "thinking": "Claude checks.", "signature": "c2lnLWNsYXVkZQ=="} in [
        block for message in claude_again if isinstance(message["content"], list) for block in message["content"]
    ]  # fmt: skip
    gemini_turns = [
        content for content in requests[3].body["contents"] if content["role"] == "model"
    ]
    assert all(
        any(part.get("thoughtSignature") for part in turn["parts"] if "functionCall" in part)
        for turn in gemini_turns
    )  # Gemini 3 wants a signature on the first call of every turn, foreign ones included


def assert_transcript_survives_json(new: list[Any]) -> None:
    messages: list[Message] = [message for message in new if message.role != "custom"]
    check_transcript(messages)
    replies = [message for message in messages if isinstance(message, AssistantMessage)]
    assert [reply.api for reply in replies] == ORDER
    assert all(
        any(isinstance(block, ThinkingContent) for block in reply.content) for reply in replies
    )
    calls = [block for reply in replies for block in reply.content if isinstance(block, ToolCall)]
    assert len(calls) == 7 and len({call.id for call in calls}) == 7
    assert serialization.loads(serialization.dumps(messages), list[Message]) == messages
