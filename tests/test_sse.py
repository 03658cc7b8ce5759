"""pi_core.sse: an agent run streamed by a real server (hypercorn, Starlette) to a real client."""

from __future__ import annotations

import subprocess
import sys

import anyio
import httpx
import pytest
from httpx_sse import aconnect_sse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from asgi_server import serve_on_localhost
from json_events import load_events
from pi_core import (
    Agent,
    AgentBusyError,
    AgentEvent,
    TextContent,
    ToolExecutionEnd,
    UserMessage,
    tool,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.sse import agent_events_response, sse_data
from pi_core.testing import check_event_grammar

pytestmark = pytest.mark.anyio

DEADLINE = 30


@tool
async def double(n: int) -> str:
    """Double a number."""
    return str(2 * n)


def counting_agent() -> Agent:
    """An agent whose every prompt calls ``double`` once, then answers."""
    faux = FauxProvider()
    replies = [faux_assistant_message([faux_tool_call("double", {"n": 21})], stop_reason="toolUse")]
    faux.set_responses(
        [*replies, faux_assistant_message("42"), *replies, faux_assistant_message("42")]
    )
    return Agent(model=faux.get_model(), stream_fn=faux.stream, tools=[double])


def app_for(agent: Agent) -> Starlette:
    async def events(request: Request) -> Response:
        try:
            response = agent_events_response(agent, request.query_params["prompt"])
        except AgentBusyError as exc:
            return PlainTextResponse(str(exc), status_code=409)
        response.set_cookie("conversation", "one")
        return response

    return Starlette(routes=[Route("/events", events)])


async def stream_events(url: str, prompt: str) -> tuple[httpx.Response, list[AgentEvent]]:
    async with (
        httpx.AsyncClient() as client,
        aconnect_sse(client, "GET", f"{url}/events", params={"prompt": prompt}) as source,
    ):
        data = [message.data async for message in source.aiter_sse()]
    return source.response, load_events(data)


async def test_a_run_streams_whole_and_one_agent_carries_a_conversation(
    anyio_backend: str,
) -> None:
    agent = counting_agent()
    with anyio.fail_after(DEADLINE):
        async with serve_on_localhost(app_for(agent), anyio_backend) as url:
            response, first = await stream_events(url, "double 21")
            _, second = await stream_events(url, "again")
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert response.cookies["conversation"] == "one"  # headers set on the response go out
    for events in (first, second):
        check_event_grammar(events)
        assert [e.type for e in events].count("agent_start") == 1  # the first listener is gone
        ends = [e.result.content for e in events if isinstance(e, ToolExecutionEnd)]
        assert ends == [[TextContent("42")]]
    prompts = [m.content for m in agent.state.messages if isinstance(m, UserMessage)]
    assert prompts == [[TextContent("double 21")], [TextContent("again")]]


async def test_a_client_that_leaves_cancels_the_run(anyio_backend: str) -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    @tool
    async def wait_forever() -> str:
        """Never return."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    faux = FauxProvider()
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("wait_forever", {})], stop_reason="toolUse")]
    )
    agent = Agent(model=faux.get_model(), stream_fn=faux.stream, tools=[wait_forever])
    with anyio.fail_after(DEADLINE):
        async with serve_on_localhost(app_for(agent), anyio_backend) as url:
            # A plain socket: the client reads until the tool runs, then hangs up.
            host, port = url.removeprefix("http://").split(":")
            async with await anyio.connect_tcp(host, int(port)) as client:
                await client.send(b"GET /events?prompt=go HTTP/1.1\r\nHost: test\r\n\r\n")
                received = b""
                while b'"type":"tool_execution_start"' not in received:
                    received += await client.receive()
            await cancelled.wait()
            await agent.wait_for_idle()  # the run unwinds after the tool
    assert started.is_set() and not agent.state.is_streaming


async def test_a_busy_agent_is_refused_before_the_response_starts(anyio_backend: str) -> None:
    started, release = anyio.Event(), anyio.Event()

    async def wait(event: AgentEvent) -> None:
        if event.type == "agent_start":
            started.set()
            await release.wait()

    agent = counting_agent()
    agent.subscribe(wait)
    with anyio.fail_after(DEADLINE):
        async with (
            serve_on_localhost(app_for(agent), anyio_backend) as url,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(agent.prompt, "busy")
            await started.wait()
            async with httpx.AsyncClient() as client:
                refused = await client.get(f"{url}/events", params={"prompt": "too"})
            release.set()
    assert refused.status_code == 409
    assert "one Agent per conversation" in refused.text


def test_an_event_is_one_data_line_of_json() -> None:
    agent_end = load_events(['{"type": "agent_end", "messages": []}'])[0]
    text = sse_data(agent_end)
    assert text.startswith("data: {") and text.endswith("}\n\n") and text.count("\n") == 2
    assert load_events([text.removeprefix("data: ")]) == [agent_end]


def test_the_module_imports_without_starlette_and_says_what_to_install() -> None:
    script = """
import sys
sys.modules["starlette"] = None  # as if it were not installed
from pi_core import Agent
from pi_core.sse import agent_events_response
try:
    agent_events_response(Agent(), "hi")
except ImportError as exc:
    print(exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.startswith("agent_events_response needs starlette: pip install ")
    assert "[server]" in done.stdout
