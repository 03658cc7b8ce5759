"""``stream_proxy`` ⇄ ``create_proxy_app`` over a real hypercorn server on 127.0.0.1, on the
test's own backend, with a FauxProvider behind the server."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from _proxy_support import collect, final_message, kinds, serve_app

from pi_core import (
    AbortController,
    Agent,
    AgentTool,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    TextContent,
    UserMessage,
)
from pi_core.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from pi_core.proxy import create_proxy_app, stream_proxy
from pi_core.serialization import to_dict
from pi_core.testing import check_event_grammar, check_transcript

pytestmark = pytest.mark.anyio

TOKEN = "e2e-token"
CONTEXT = Context("be helpful", [UserMessage("hi", timestamp=1)])


class Observed:
    """Wraps a stream function and records how the server's call of it ended."""

    def __init__(self, faux: FauxProvider) -> None:
        self.faux = faux
        self.closed = anyio.Event()
        self.aborted: bool | None = None
        self.options: list[StreamOptions] = []

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.options.append(options)
        try:
            # aclosing: the server closes this generator after the terminal event, and the
            # faux one inside must then close too, not wait for the garbage collector.
            async with aclosing(self.faux.stream(model, context, options)) as events:  # type: ignore[type-var]
                async for event in events:
                    yield event
        finally:
            assert options.signal is not None
            self.aborted = options.signal.aborted
            self.closed.set()


def reply() -> Any:
    return faux_assistant_message(
        [
            faux_thinking("Let me think about which tools to call."),
            faux_text("Calling two tools at once."),
            faux_tool_call("weather", {"city": "Paris", "units": "metric"}, id="call-1"),
            faux_tool_call("weather", {"city": "Tokyo", "days": [1, 2, 3]}, id="call-2"),
        ],
        stop_reason="toolUse",
    )


def without_timestamp(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "timestamp"}


async def test_text_thinking_parallel_tool_calls_and_usage_arrive_whole(anyio_backend: str) -> None:
    # The same seeded chunking locally and behind the proxy: the same events must come out.
    local = FauxProvider(seed=7)
    local.set_responses([reply()])
    expected = await collect(
        local.stream(local.get_model(), CONTEXT, StreamOptions(session_id="s"))
    )

    faux = FauxProvider(seed=7)
    faux.set_responses([reply()])
    observed = Observed(faux)
    app = create_proxy_app(observed.stream, auth_token=TOKEN)
    async with serve_app(app, anyio_backend) as url:
        options = StreamOptions(session_id="s", temperature=0.5, api_key="never-sent")
        stream = stream_proxy(faux.get_model(), CONTEXT, options, proxy_url=url, auth_token=TOKEN)
        events = await collect(stream)

    assert kinds(events) == kinds(expected)
    message = final_message(events)
    assert without_timestamp(to_dict(message)) == without_timestamp(
        to_dict(final_message(expected))
    )
    assert message.stop_reason == "toolUse"
    assert message.usage.total_tokens > 0
    assert all(getattr(event, "partial", message) is message for event in events)
    (server_options,) = observed.options
    assert (server_options.session_id, server_options.temperature) == ("s", 0.5)
    assert server_options.api_key is None


async def test_an_agent_runs_tools_through_the_proxy(anyio_backend: str) -> None:
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("add", {"a": 2, "b": 3}, id="c1")], stop_reason="toolUse"
            ),
            faux_assistant_message("The sum is 5."),
        ]
    )

    async def add(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        return str(params["a"] + params["b"])

    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    async with serve_app(create_proxy_app(faux.stream, auth_token=TOKEN), anyio_backend) as url:
        agent = Agent(
            model=faux.get_model(),
            tools=[AgentTool("add", "adds", schema, add)],
            stream_fn=functools.partial(stream_proxy, proxy_url=url, auth_token=TOKEN),
        )
        events: list[Any] = []
        agent.subscribe(lambda event, _signal: events.append(event))
        with anyio.fail_after(10):
            await agent.prompt("add 2 and 3")

    check_event_grammar(events)
    check_transcript(agent.state.messages)
    assert [message.role for message in agent.state.messages] == [
        "system",  # the tool's declaration, which the proxy passed on
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert agent.state.messages[3].content == [TextContent("5")]  # type: ignore[union-attr]
    assert agent.state.messages[4].content == [TextContent("The sum is 5.")]  # type: ignore[union-attr]
    assert agent.state.error_message is None


def slow_faux() -> Observed:
    """A reply of 500 one-token chunks at 20 tokens a second: it cannot finish in a test."""
    faux = FauxProvider(tokens_per_second=20, token_size=(1, 1))
    faux.set_responses([faux_assistant_message("abcd" * 500)])
    return Observed(faux)


async def test_abort_mid_stream_ends_the_client_and_cancels_the_server_stream(
    anyio_backend: str,
) -> None:
    observed = slow_faux()
    controller = AbortController()

    def abort_at_first_delta(event: AssistantMessageEvent) -> None:
        if event.type == "text_delta":
            controller.abort()

    async with serve_app(create_proxy_app(observed.stream, auth_token=TOKEN), anyio_backend) as url:
        options = StreamOptions(signal=controller.signal)
        model = observed.faux.get_model()
        stream = stream_proxy(model, CONTEXT, options, proxy_url=url, auth_token=TOKEN)
        events = await collect(stream, abort_at_first_delta)
        with anyio.fail_after(10):
            await observed.closed.wait()

    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    message = final_message(events)
    assert (message.stop_reason, message.error_message) == ("aborted", "Request aborted by user")
    assert message.content == [TextContent("abcd")]
    assert observed.aborted is True


async def test_a_client_that_closes_the_response_early_cancels_the_server_stream(
    anyio_backend: str,
) -> None:
    observed = slow_faux()
    async with serve_app(create_proxy_app(observed.stream, auth_token=TOKEN), anyio_backend) as url:
        model = observed.faux.get_model()
        stream = stream_proxy(model, CONTEXT, proxy_url=url, auth_token=TOKEN)
        async with aclosing(stream):  # type: ignore[type-var]
            with anyio.fail_after(10):
                async for event in stream:
                    if event.type == "text_delta":
                        break
        with anyio.fail_after(10):
            await observed.closed.wait()
    assert observed.aborted is True


async def test_a_wrong_token_is_a_proxy_error_over_real_http(anyio_backend: str) -> None:
    faux = FauxProvider()
    async with serve_app(create_proxy_app(faux.stream, auth_token=TOKEN), anyio_backend) as url:
        stream = stream_proxy(faux.get_model(), CONTEXT, proxy_url=url, auth_token="nope")
        events = await collect(stream)
    assert kinds(events) == ["error"]
    assert final_message(events).error_message == "Proxy error: Invalid bearer token"
    assert faux.call_count == 0


async def test_an_unknown_api_is_the_servers_error_event(anyio_backend: str) -> None:
    async with serve_app(create_proxy_app(auth_token=TOKEN), anyio_backend) as url:
        model = Model("m", api="no-such-api")
        events = await collect(stream_proxy(model, CONTEXT, proxy_url=url, auth_token=TOKEN))
    assert kinds(events) == ["error"]
    assert (final_message(events).error_message or "").startswith(
        "No API provider registered for api: no-such-api ("
    )
