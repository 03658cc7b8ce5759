"""Typed output over the four HTTP APIs, against a real local server: the output tool in every
request, what the model reads after a miss, and the last retry forcing the tool, read back from
each request body by that API's own documented fields."""

from __future__ import annotations

import json
from typing import Any

import anyio
import attrs
import pytest
from _forced_tools import (
    APIS,
    CLAUDE,
    STREAMS,
    choice_of,
    choice_problems,
    declared,
    models,
    text_reply,
    tool_call_reply,
)
from _replay_server import open_replay_server

from pi_core import Agent, OutputError, RunOutcome, StreamOptions

pytestmark = pytest.mark.anyio

BOUND = 60.0


@attrs.frozen
class Invoice:
    """An invoice."""

    number: str
    total: float


def agent_for(api: str, base_url: str, **options: Any) -> Agent:
    return Agent(
        model=models(base_url)[api],
        stream_fn=STREAMS[api],
        options=StreamOptions(api_key="k"),
        output_type=Invoice,
        **options,
    )


@pytest.mark.parametrize("api", APIS)
async def test_a_valid_first_answer_over_each_api(anyio_backend: str, api: str) -> None:
    replies = [tool_call_reply(api, "final_result", '{"number": "INV-1", "total": "9.5"}')]
    async with open_replay_server(replies, anyio_backend) as server:
        agent = agent_for(api, server.base_url)
        with anyio.fail_after(BOUND):
            result = await agent.prompt("Read the invoice.")
    assert result.output == Invoice("INV-1", 9.5), result.error_message
    [request] = server.requests
    assert declared(api, request.body) == ["final_result"]
    assert choice_of(api, request.body) is None


@pytest.mark.parametrize("api", APIS)
async def test_text_then_an_invalid_call_then_the_forced_last_retry_over_each_api(
    anyio_backend: str, api: str
) -> None:
    replies = [
        text_reply(api, "It says INV-2."),
        tool_call_reply(api, "final_result", '{"number": "INV-2"}', call_id="call_2"),
        tool_call_reply(api, "final_result", '{"number": "INV-2", "total": 4}', call_id="call_3"),
    ]
    async with open_replay_server(replies, anyio_backend) as server:
        agent = agent_for(api, server.base_url)
        with anyio.fail_after(BOUND):
            result = await agent.prompt("Read the invoice.")
    assert result.output == Invoice("INV-2", 4.0), result.error_message
    bodies = [request.body for request in server.requests]
    assert [choice_of(api, body) for body in bodies] == [None, None, {"name": "final_result"}]
    assert all(choice_problems(api, body) == [] for body in bodies)
    assert all(declared(api, body) == ["final_result"] for body in bodies)
    # After the text: the request asks for the call. After the invalid call: the error.
    second, third = json.dumps(bodies[1]), json.dumps(bodies[2])
    assert "Respond by calling the final_result tool." in second
    assert "total: missing" in third and 'Validation failed for tool \\"final_result\\"' in third


async def test_the_forced_retry_turns_anthropic_thinking_off_for_that_request(
    anyio_backend: str,
) -> None:
    replies = [
        text_reply(CLAUDE, "INV-3."),
        text_reply(CLAUDE, "Really, INV-3."),
        tool_call_reply(CLAUDE, "final_result", '{"number": "INV-3", "total": 1}'),
    ]
    async with open_replay_server(replies, anyio_backend) as server:
        agent = agent_for(CLAUDE, server.base_url, thinking_level="low")
        agent.model = attrs.evolve(agent.model, reasoning=True)
        with anyio.fail_after(BOUND):
            result = await agent.prompt("Read the invoice.")
    assert result.output == Invoice("INV-3", 1.0), result.error_message
    bodies = [request.body for request in server.requests]
    assert [b.get("thinking", {}).get("type") for b in bodies][:2] == ["enabled", "enabled"]
    assert choice_of(CLAUDE, bodies[2]) == {"name": "final_result"}
    assert choice_problems(CLAUDE, bodies[2]) == []


async def test_spent_retries_over_http_fail_the_run(anyio_backend: str) -> None:
    api = APIS[2]  # the Responses API
    replies = [text_reply(api, f"no {i}") for i in range(3)]
    async with open_replay_server(replies, anyio_backend) as server:
        agent = agent_for(api, server.base_url)
        with anyio.fail_after(BOUND):
            result = await agent.prompt("Read the invoice.")
    assert result.outcome is RunOutcome.ERROR
    assert result.error_message == (
        "Output failed after 2 retries: the reply did not call the final_result tool"
    )
    assert len(server.requests) == 3
    with pytest.raises(OutputError):
        result.raise_for_error()
