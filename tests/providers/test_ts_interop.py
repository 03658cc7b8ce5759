"""Transcripts interchange with the TypeScript Pi: pi-ai's own Responses and Gemini providers, of
1.6.0 and of 0.73.1, run under Node against the same recorded streams, build the same messages as
ours, and continue a transcript that we wrote with the same request as ours.

The Node side is ``tests/proxy/interop/provider.mjs``; the tests skip (saying why) without
node >= 20 and npm (see tests/node_interop.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
import test_google
import test_openai_responses
from _replay_server import Reply, open_replay_server
from _stream_checks import collect, final_message

from node_interop import INTEROP, NODE_DEADLINE, VERSIONS
from pi_core import (
    AssistantMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    serialization,
)
from pi_core.providers import google, openai_responses

pytestmark = pytest.mark.anyio

Case = tuple[Model, list[bytes], Callable[..., Any], str]
CASES: dict[str, Case] = {
    "responses": (
        test_openai_responses.MODEL,
        test_openai_responses.TOOL_BODY,
        openai_responses.stream_openai_responses,
        "input",
    ),
    "gemini": (test_google.MODEL, test_google.TOOL_BODY, google.stream_google, "contents"),
}
CONTEXT = Context("Be brief.", [UserMessage("Weather in Paris?", timestamp=1)])


async def ts_reply(
    node: str, pi: str, model: Model, context: Context, scratch: Path
) -> AssistantMessage:
    """pi-ai ``pi``'s reply for ``model`` and ``context`` (both handed over as our JSON)."""
    request = scratch / "input.json"
    payload = {"model": serialization.to_dict(model), "context": serialization.to_dict(context)}
    request.write_text(json.dumps(payload))
    with anyio.fail_after(NODE_DEADLINE):
        done = await anyio.run_process(
            [node, "provider.mjs", pi, str(request)], cwd=INTEROP, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    line = done.stdout.decode().strip().splitlines()[-1]
    return serialization.from_dict(json.loads(line), AssistantMessage)


def without_made_up_ids(message: AssistantMessage, wire: bytes) -> list[Any]:
    """The content, with tool call ids that are not on the wire (each side makes its own for a
    Gemini call without one) replaced by a placeholder."""
    return [
        attrs.evolve(block, id="<made up>")
        if isinstance(block, ToolCall) and block.id.split("|")[-1] not in wire.decode()
        else block
        for block in message.content
    ]


def answers(reply: AssistantMessage) -> list[Message]:
    return [
        ToolResultMessage(block.id, block.name, [TextContent(f"{block.name} done")], timestamp=2)
        for block in reply.content
        if isinstance(block, ToolCall)
    ]


@pytest.mark.parametrize("pi", VERSIONS)
@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_same_stream_makes_the_same_message_and_the_same_next_request(
    node: str, anyio_backend: str, tmp_path: Path, case: str, pi: str
) -> None:
    model, body, stream_fn, field = CASES[case]
    replies = [Reply(chunks=body) for _ in range(4)]
    async with open_replay_server(replies, anyio_backend) as server:
        served = attrs.evolve(model, base_url=server.base_url)
        options = StreamOptions(api_key="k")
        ours = final_message(await collect(stream_fn(served, CONTEXT, options)))
        theirs = await ts_reply(node, pi, served, CONTEXT, tmp_path)
        wire = b"".join(body)
        assert without_made_up_ids(theirs, wire) == without_made_up_ids(ours, wire)
        assert (theirs.stop_reason, theirs.response_id) == (ours.stop_reason, ours.response_id)

        # Our reply, in our JSON, continues in TypeScript exactly as it does here.
        following = Context(CONTEXT.system_prompt, [*CONTEXT.messages, ours, *answers(ours)])
        await collect(stream_fn(served, following, options))
        await ts_reply(node, pi, served, following, tmp_path)
        ours_sent, theirs_sent = (request.body[field] for request in server.requests[2:])
    assert theirs_sent == ours_sent
