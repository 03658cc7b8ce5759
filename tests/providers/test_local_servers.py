"""Local OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio) refuse an assistant
message whose ``content`` is ``null``: llama.cpp's server answers 500 to the request after a
tool call. pi_core sends ``""`` to such servers, detected by an address that is neither
OpenAI's nor a known hosted service's.

llama-cpp-python's server needs a C++ build and a model file, too slow for the suite, so the
server here is a replay server on 127.0.0.1 that enforces the same rule with the same refusal.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from _replay_server import Reply, open_replay_server, sse_event

from pi_core import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    Model,
    ModelCompat,
    StreamOptions,
    TextContent,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers import openai

pytestmark = pytest.mark.anyio

REFUSAL = {
    "error": {
        "code": 500,
        "message": "[json.exception.type_error.302] type must be string, but is null",
        "type": "server_error",
    }
}


def llama_cpp_rule(body: Any) -> Reply | None:
    """llama.cpp's chat template reads every message's content as a string."""
    for message in body["messages"]:
        if message["role"] == "assistant" and not isinstance(message.get("content"), str):
            return Reply(500, [json.dumps(REFUSAL).encode()], content_type="application/json")
    return None


def reply(delta: dict[str, Any], finish: str) -> Reply:
    chunks = [
        {"id": "c", "model": "local", "choices": [{"index": 0, "delta": delta}]},
        {
            "id": "c",
            "model": "local",
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        },
    ]
    return Reply(chunks=[*(sse_event(chunk) for chunk in chunks), sse_event("[DONE]")])


async def add(tool_call_id: str, params: Any, signal: AbortSignal, on_update: object) -> str:
    return str(params["a"] + params["b"])


ADDER = AgentTool(
    "add",
    "Add two numbers.",
    {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
    add,
)
CALL = {
    "tool_calls": [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
        }
    ]
}


async def run_against_llama_cpp(
    anyio_backend: str, compat: ModelCompat | None = None
) -> tuple[list[Any], list[Any]]:
    """A tool round against the llama.cpp stand-in; the new messages and the request bodies."""
    replies = [reply(CALL, "tool_calls"), reply({"content": "It is 5."}, "stop")]
    async with open_replay_server(replies, anyio_backend, llama_cpp_rule) as server:
        model = Model(
            "qwen2.5-0.5b-instruct",
            api="openai-completions",
            provider="llama.cpp",
            base_url=f"{server.base_url}/v1",
            compat=compat,
        )
        options = StreamOptions(api_key="none", max_retries=0)
        config = AgentLoopConfig(model, stream_fn=openai.stream_openai, options=options)
        with anyio.fail_after(10):
            new = await run_agent_loop(
                [UserMessage("2+3?")],
                AgentContext("Be brief.", [], [ADDER]),
                config,
                lambda event: None,
            )
    return new, [request.body for request in server.requests]


async def test_a_tool_round_with_a_local_server(anyio_backend: str) -> None:
    new, bodies = await run_against_llama_cpp(anyio_backend)
    final = new[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.stop_reason, final.content) == ("stop", [TextContent("It is 5.")])
    assert bodies[1]["messages"][2]["content"] == ""
    assert bodies[1]["messages"][2]["tool_calls"][0]["id"] == "call_1"
    assert bodies[0]["messages"][0]["role"] == "system" and "store" not in bodies[0]


async def test_the_stand_in_refuses_null_as_llama_cpp_does(anyio_backend: str) -> None:
    nulls = ModelCompat(requires_non_null_assistant_content=False)
    new, _ = await run_against_llama_cpp(anyio_backend, nulls)
    final = new[-1]
    assert isinstance(final, AssistantMessage) and final.stop_reason == "error"
    assert final.error_message is not None and "type must be string" in final.error_message
