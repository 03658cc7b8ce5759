"""partial_output over a real streamed reply: arguments one character per delta, the body cut
into pieces of 1, 5 and 11 bytes, read by the Chat Completions provider through a whole run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import attrs
import pytest
from _forced_tools import CHAT, STREAMS, models, text_reply
from _replay_server import Reply, open_replay_server, split_awkwardly, sse_event

from pi_core import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    StreamOptions,
    UserMessage,
    partial_output,
    run_agent_loop,
)
from pi_core.lowlevel import OUTPUT_TOOL

pytestmark = pytest.mark.anyio

ARGUMENTS = {"number": "INV-7", "total": 9.5, "lines": ["tea", "cake"]}


def char_by_char_reply(arguments: str) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse_event(
            {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        )

    start = {
        "index": 0,
        "id": "call_o",
        "type": "function",
        "function": {"name": OUTPUT_TOOL, "arguments": ""},
    }
    lines = [chunk({"tool_calls": [start]})]
    lines += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": c}}]}) for c in arguments
    ]
    lines += [chunk({}, "tool_calls"), sse_event("[DONE]")]
    return Reply(chunks=split_awkwardly(lines, (1, 5, 11)))


def partials_seen() -> tuple[list[dict[str, Any]], Callable[[AgentEvent], None]]:
    """A listener keeping each new partial output (a copy: the live one grows), and its list."""
    seen: list[dict[str, Any]] = []

    def listen(event: AgentEvent) -> None:
        partial = partial_output(event)
        if partial is not None and (not seen or partial != seen[-1]):
            seen.append(json.loads(json.dumps(partial)))

    return seen, listen


async def answered(*_: Any) -> str:
    return "Final result processed."


async def test_partial_output_grows_with_a_reply_streamed_character_by_character(
    anyio_backend: str,
) -> None:
    text = json.dumps(ARGUMENTS)
    seen, listen = partials_seen()

    replies = [char_by_char_reply(text), text_reply(CHAT, "Done.")]
    async with open_replay_server(replies, anyio_backend) as server:
        config = AgentLoopConfig(
            models(server.base_url)[CHAT],
            stream_fn=STREAMS[CHAT],
            options=StreamOptions(api_key="k"),
        )
        tool = AgentTool(OUTPUT_TOOL, "The answer.", {"type": "object"}, answered)
        with anyio.fail_after(60):
            await run_agent_loop(
                [UserMessage("Read it.")], AgentContext(tools=[tool]), config, listen
            )
    assert seen[-1] == ARGUMENTS
    assert len(seen) > 5  # it filled in piece by piece
    assert {"number": "INV-7"} in seen  # a field readable before the rest arrived
    assert {"number": "INV-7", "total": 9.5, "lines": ["tea"]} in seen


@attrs.frozen
class Invoice:
    number: str
    total: float
    lines: list[str]


def one_byte_reply(arguments: str) -> Reply:
    """The character-by-character reply, its body cut into 1-byte pieces only."""
    reply = char_by_char_reply(arguments)
    body = b"".join(reply.chunks)
    return Reply(chunks=[body[i : i + 1] for i in range(len(body))])


async def test_a_typed_agent_run_streams_its_partial_output_from_one_byte_chunks(
    anyio_backend: str,
) -> None:
    text = json.dumps(ARGUMENTS)
    seen, listen = partials_seen()

    async with open_replay_server([one_byte_reply(text)], anyio_backend) as server:
        agent = Agent(
            model=models(server.base_url)[CHAT],
            stream_fn=STREAMS[CHAT],
            options=StreamOptions(api_key="k"),
            output_type=Invoice,
        )
        agent.subscribe(listen)
        with anyio.fail_after(60):
            result = await agent.prompt("Read it.")
    assert result.output == Invoice("INV-7", 9.5, ["tea", "cake"])
    assert len(server.requests) == 1  # the valid answer ended the run
    assert seen[-1] == ARGUMENTS
    assert {"number": "INV-7"} in seen
    assert {"number": "INV-7", "total": 9.5, "lines": ["tea"]} in seen
