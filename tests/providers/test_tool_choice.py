"""``tool_choice`` and ``sampling_params`` on the four HTTP APIs, against a real local server.

Each request the server receives is read back as the tool choice it expresses, by that API's
own documented fields, and checked against what the API would refuse.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from _forced_tools import (
    APIS,
    CHAT,
    CLAUDE,
    RESPONSES,
    STREAMS,
    choice_of,
    choice_problems,
    models,
    sampling_of,
    text_reply,
    tool_call_reply,
)
from _replay_server import open_replay_server
from _stream_checks import collect

from pi_core import Context, StreamDone, StreamOptions, Tool, ToolCall, UserMessage

pytestmark = pytest.mark.anyio

TOOLS = [
    Tool("lookup", "Looks a word up.", {"type": "object", "properties": {"q": {"type": "string"}}}),
    Tool("other", "Something else.", {"type": "object", "properties": {}}),
]
CONTEXT = Context(system_prompt="Be brief.", messages=[UserMessage("Define 'pi'.")], tools=TOOLS)
CHOICES: list[Any] = ["auto", "none", "required", {"name": "lookup"}]


async def one_request(
    backend: str, api: str, options: StreamOptions, context: Context = CONTEXT, **model: Any
) -> tuple[dict[str, Any], list[Any]]:
    """Stream one reply of ``api``; the request body the server saw, and the events."""
    async with open_replay_server(
        [tool_call_reply(api, "lookup", '{"q": "pi"}')], backend
    ) as server:
        chosen = attrs.evolve(models(server.base_url)[api], **model)
        events = await collect(STREAMS[api](chosen, context, options))
    return server.requests[0].body, events


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("choice", CHOICES, ids=["auto", "none", "required", "named"])
async def test_each_choice_in_each_apis_words(anyio_backend: str, api: str, choice: Any) -> None:
    body, events = await one_request(
        anyio_backend, api, StreamOptions(api_key="k", tool_choice=choice)
    )
    assert choice_of(api, body) == choice
    assert choice_problems(api, body) == []
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert [c.name for c in done.message.content if isinstance(c, ToolCall)] == ["lookup"]


@pytest.mark.parametrize("api", APIS)
async def test_no_choice_sends_none(anyio_backend: str, api: str) -> None:
    body, _ = await one_request(anyio_backend, api, StreamOptions(api_key="k"))
    assert choice_of(api, body) is None


@pytest.mark.parametrize("api", APIS)
async def test_a_request_without_tools_sends_no_choice(anyio_backend: str, api: str) -> None:
    bare = Context(messages=CONTEXT.messages)
    async with open_replay_server([text_reply(api, "Hi.")], anyio_backend) as server:
        options = StreamOptions(api_key="k", tool_choice="required")
        await collect(STREAMS[api](models(server.base_url)[api], bare, options))
    body = server.requests[0].body
    assert choice_of(api, body) is None
    assert choice_problems(api, body) == []


@pytest.mark.parametrize("choice", ["required", {"name": "lookup"}], ids=["required", "named"])
async def test_anthropic_forcing_a_tool_turns_thinking_off_for_that_request(
    anyio_backend: str, choice: Any
) -> None:
    options = StreamOptions(api_key="k", tool_choice=choice, reasoning="high", temperature=0.2)
    body, _ = await one_request(anyio_backend, CLAUDE, options, reasoning=True)
    assert body["thinking"] == {"type": "disabled"}
    assert body["temperature"] == 0.2
    assert choice_problems(CLAUDE, body) == []


async def test_anthropic_auto_keeps_thinking(anyio_backend: str) -> None:
    options = StreamOptions(api_key="k", tool_choice="auto", reasoning="high")
    body, _ = await one_request(anyio_backend, CLAUDE, options, reasoning=True)
    assert body["thinking"]["type"] != "disabled"


SAMPLING = {"top_p": 0.9, "top_k": 40, "min_p": 0.05, "temperature": 0.7}


@pytest.mark.parametrize("api", [CHAT, RESPONSES])
async def test_sampling_params_are_merged_last_on_openai_apis(anyio_backend: str, api: str) -> None:
    options = StreamOptions(api_key="k", temperature=0.1, sampling_params=SAMPLING)
    body, _ = await one_request(anyio_backend, api, options)
    assert sampling_of(body) == {"top_p": 0.9, "top_k": 40, "min_p": 0.05}
    assert body["temperature"] == 0.7  # the parameters override the named field


@pytest.mark.parametrize("api", [a for a in APIS if a not in (CHAT, RESPONSES)])
async def test_sampling_params_are_ignored_by_the_other_apis(anyio_backend: str, api: str) -> None:
    options = StreamOptions(api_key="k", temperature=0.1, sampling_params=SAMPLING)
    body, _ = await one_request(anyio_backend, api, options)
    assert sampling_of(body) == {}
    temperature = body.get("temperature", body.get("generationConfig", {}).get("temperature"))
    assert temperature == 0.1
