"""The AI SDK's UI message stream: the ``ai`` npm package's own parser and reader take what
``ui_message_stream`` writes and build the message we meant, on both backends."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from asgi_server import serve_on_localhost
from pi_core import AssistantMessage
from pi_core.ui import ui_message_stream, ui_message_stream_response
from ui.ui_support import AgentRecorder, run_node

pytestmark = pytest.mark.anyio


def chat_app(recorder: AgentRecorder) -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        return ui_message_stream_response(recorder(), body["prompt"])

    return Starlette(routes=[Route("/chat", chat, methods=["POST"])])


async def test_the_ai_sdk_reads_text_reasoning_steps_and_tools(
    ui_node: str, anyio_backend: str
) -> None:
    async with serve_on_localhost(chat_app(AgentRecorder()), anyio_backend) as url:
        out = await run_node(ui_node, "ui_message_stream.mjs", url + "/chat", "sleep 0.6 and 1/0")
    assert out["header"] == "v1"
    assert out["errors"] == []
    message = out["message"]
    assert message["role"] == "assistant"
    kinds = [part["type"] for part in message["parts"]]
    assert kinds == [
        "step-start", "reasoning", "text", "dynamic-tool", "dynamic-tool", "dynamic-tool",
        "step-start", "reasoning", "text",
    ]  # fmt: skip
    tools = {part["toolName"]: part for part in message["parts"] if part["type"] == "dynamic-tool"}
    assert tools["sleep"]["state"] == "output-available"
    assert tools["sleep"]["input"] == {"seconds": 0.6}
    assert tools["sleep"]["output"]["text"] == "slept 0.6 s"
    assert tools["calculate"]["state"] == "output-error"
    assert "division by zero" in tools["calculate"]["errorText"]
    texts = [part["text"] for part in message["parts"] if part["type"] == "text"]
    assert texts[0] == "I'll run 3 tools in parallel."
    assert texts[1].startswith("Here is what the tools reported:")
    assert message["parts"][1]["text"].startswith("The user wrote:")
    # The finish part: the stop reason and the usage, as the message's metadata.
    finish = out["chunks"][-1]
    assert finish["type"] == "finish" and finish["finishReason"] == "stop"
    metadata = message["metadata"]
    assert metadata["stopReason"] == "stop" and metadata["outcome"] == "done"
    assert metadata["usage"]["totalTokens"] > 0
    # The sleep's progress came as preliminary output before the final one.
    preliminary = [c for c in out["chunks"] if c.get("preliminary")]
    assert preliminary and all(c["toolCallId"] == tools["sleep"]["toolCallId"] for c in preliminary)


async def test_the_iterator_form_ends_with_done(anyio_backend: str) -> None:
    agent = AgentRecorder()()
    parts: list[Any] = []
    async with aclosing(ui_message_stream(agent, "sleep 0 and 2+2")) as stream:
        async for part in stream:
            parts.append(part)
    assert parts[0].startswith(b'data: {"type": "start"')
    assert parts[-1] == b"data: [DONE]\n\n"
    assert not agent.state.is_streaming


async def test_a_sub_agent_streams_its_reply_as_preliminary_output(anyio_backend: str) -> None:
    agent = AgentRecorder()()
    chunks: list[dict[str, Any]] = []
    async with aclosing(ui_message_stream(agent, "research 17 * 23")) as stream:
        async for part in stream:
            if part != b"data: [DONE]\n\n":
                chunks.append(json.loads(part.removeprefix(b"data: ")))
    [call] = [c for c in chunks if c["type"] == "tool-input-available"]
    assert call["toolName"] == "research"
    outputs = [c for c in chunks if c.get("toolCallId") == call["toolCallId"]]
    preliminary = [c["output"]["text"] for c in outputs if c.get("preliminary")]
    # The child's reply as it grew: no empty outputs, none repeated, and the child's tool calls
    # (they are its own business) are not shown as the parent call's output.
    assert preliminary and all(preliminary) and len(set(preliminary)) == len(preliminary)
    final = outputs[-1]
    assert final["type"] == "tool-output-available" and not final.get("preliminary")
    assert "17 * 23 = 391" in final["output"]["text"]
    assert preliminary[-1] == final["output"]["text"]  # the child's whole reply, last
    usage = chunks[-1]["messageMetadata"]["usage"]["totalTokens"]
    # The parent's own turns and the child's are in the run's usage.
    own = sum(m.usage.total_tokens for m in agent.messages if isinstance(m, AssistantMessage))
    assert usage > own
