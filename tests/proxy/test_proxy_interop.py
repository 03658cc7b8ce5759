"""The TypeScript Pi of both eras and our proxy, each way round, under Node.

* pi-agent-core's own ``streamProxy`` (1.6.0 and 0.73.1, ``interop/stream.mjs``) against our
  server: the body of either era reaches the stream function as one normalized transcript, the
  system prompt and tools included, and the client rebuilds what the server sent.
* Our ``stream_proxy`` against a proxy server written on pi-ai of either era
  (``interop/server.mjs``): with the body of that era, its model is given our prompt and tools.

The tests skip (saying why) when node or npm is missing or ``npm ci`` fails; the nox session
``interop`` runs them in CI, where that is a failure.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import pytest
from _proxy_support import serve_app

from node_interop import INTEROP, NODE_DEADLINE, VERSIONS
from pi_core import (
    Agent,
    AgentTool,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ToolResultMessage,
    current_system_prompt,
    current_tools,
)
from pi_core.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from pi_core.proxy import ProxyStream, create_proxy_app
from pi_core.serialization import to_dict

pytestmark = pytest.mark.anyio

TOKEN = "interop-token"
SYSTEM_PROMPT = "You are a weather bot."
WIRE = {"0.73.1": "0.73", "1.6.0": "1.6"}
"""The body our client sends to a server of each era."""

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@pytest.fixture(params=VERSIONS)
def pi(request: pytest.FixtureRequest) -> str:
    """The version of the TypeScript Pi a test runs against."""
    version: str = request.param
    return version


def understood(context: Context) -> tuple[str, list[str]]:
    """The system prompt and tool names a stream function was given."""
    return current_system_prompt(context.messages), [
        t.name for t in current_tools(context.messages)
    ]


async def run_ts_client(node: str, pi: str, url: str, token: str, scenario: str = "reply") -> Any:
    """Run ``stream.mjs`` of version ``pi`` and return the JSON it prints."""
    with anyio.fail_after(NODE_DEADLINE):
        done = await anyio.run_process(
            [node, "stream.mjs", pi, url, token, scenario], cwd=INTEROP, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


class Server:
    """The faux model behind our proxy, and what the server saw: raw bodies, the options, the
    contexts and the final message of each call, and whether its stream was aborted."""

    def __init__(self) -> None:
        self.faux = FauxProvider(seed=3)
        self.bodies: list[bytes] = []
        self.options: list[StreamOptions] = []
        self.contexts: list[Context] = []
        self.finals: list[AssistantMessageEvent] = []
        self.closed = anyio.Event()
        self.aborted: bool | None = None
        self.app = create_proxy_app(self.stream, auth_token=TOKEN)

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/api/stream":
            await self.app(scope, receive, send)
            return

        async def recording_receive() -> Message:
            message = await receive()
            self.bodies.append(message.get("body", b""))
            return message

        await self.app(scope, recording_receive, send)

    def body(self) -> Any:
        """The JSON of the (one) request body received."""
        return json.loads(b"".join(self.bodies))

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.options.append(options)
        self.contexts.append(context)
        try:
            async with aclosing(self.faux.stream(model, context, options)) as events:  # type: ignore[type-var]
                async for event in events:
                    if event.type in ("done", "error"):
                        self.finals.append(event)
                    yield event
        finally:
            assert options.signal is not None
            self.aborted = options.signal.aborted
            self.closed.set()


# --- their client, our server ------------------------------------------------------------------


async def test_the_ts_client_rebuilds_text_thinking_tool_calls_and_usage(
    node: str, pi: str, anyio_backend: str
) -> None:
    server = Server()
    server.faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_thinking("Two cities, two calls."),
                    faux_text("Checking the weather in both cities."),
                    faux_tool_call("weather", {"city": "Paris", "days": [1, 2]}, id="call-1"),
                    faux_tool_call("weather", {"city": "Tokyo", "note": "ünïcödé"}, id="call-2"),
                ],
                stop_reason="toolUse",
            )
        ]
    )
    async with serve_app(server, anyio_backend) as url:
        output = await run_ts_client(node, pi, url, TOKEN)

    result = output["result"]
    (final,) = server.finals
    expected = to_dict(final.message)  # type: ignore[union-attr]
    assert result["content"] == expected["content"]
    assert result["content"][2] == {
        "type": "toolCall",
        "id": "call-1",
        "name": "weather",
        "arguments": {"city": "Paris", "days": [1, 2]},
    }
    assert result["usage"] == expected["usage"]
    assert result["usage"]["totalTokens"] > 0
    assert result["stopReason"] == "toolUse"
    assert (result["api"], result["provider"], result["model"]) == ("faux", "faux", "faux-1")
    types = [event["type"] for event in output["events"]]
    assert types[0] == "start" and types[-1] == "done"
    assert types.count("toolcall_end") == 2
    assert output["events"][-1]["reason"] == "toolUse"

    # What the TS client sent: its options (never the API key), and its era's context.
    body = server.body()
    assert "apiKey" not in body["options"]
    assert body["options"] == {"temperature": 0.5, "sessionId": "interop"}
    context = body["context"]
    if pi == "0.73.1":
        assert context["systemPrompt"] == SYSTEM_PROMPT
        assert context["tools"][0]["label"] == "Weather"
    else:
        assert set(context) == {"messages"}
        assert context["messages"][0]["role"] == "system"
        assert context["messages"][0]["toolsAdded"][0]["name"] == "weather"
    (options,) = server.options
    assert (options.temperature, options.session_id, options.api_key) == (0.5, "interop", None)
    # Either way the stream function gets one transcript that holds the prompt and the tools.
    (seen,) = server.contexts
    assert (seen.system_prompt, seen.tools) == (None, [])
    assert isinstance(seen.messages[0], SystemMessage)
    assert understood(seen) == (SYSTEM_PROMPT, ["weather"])


async def test_the_ts_agent_runs_its_tools_through_our_server(
    node: str, pi: str, anyio_backend: str
) -> None:
    server = Server()
    server.faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("weather", {"city": "Paris"}, id="call-1")],
                stop_reason="toolUse",
            ),
            faux_assistant_message("Sunny in Paris."),
        ]
    )
    async with serve_app(server, anyio_backend) as url:
        output = await run_ts_client(node, pi, url, TOKEN, "agent")

    messages = output["messages"]
    roles = [message["role"] for message in messages]
    told = ["system"] if pi == "1.6.0" else []  # 1.6.0's transcript opens with its prompt
    assert roles == [*told, "user", "assistant", "toolResult", "assistant"]
    assert messages[-2]["content"] == [{"type": "text", "text": "sunny in Paris"}]
    assert messages[-1]["content"] == [{"type": "text", "text": "Sunny in Paris."}]
    assert output["events"][0] == "agent_start" and output["events"][-1] == "agent_end"
    # The second call was told the prompt and the tools, and got the first reply back.
    first, second = server.contexts
    assert understood(first) == understood(second) == (SYSTEM_PROMPT, ["weather"])
    assert [message.role for message in second.messages] == [
        "system",
        "user",
        "assistant",
        "toolResult",
    ]


async def test_the_ts_client_shows_a_401_as_proxy_error(
    node: str, pi: str, anyio_backend: str
) -> None:
    server = Server()
    async with serve_app(server, anyio_backend) as url:
        output = await run_ts_client(node, pi, url, "wrong-token")
    assert [event["type"] for event in output["events"]] == ["error"]
    assert output["result"]["stopReason"] == "error"
    assert output["result"]["errorMessage"] == "Proxy error: Invalid bearer token"
    assert server.faux.call_count == 0


async def test_an_abort_in_the_ts_client_cancels_the_servers_stream(
    node: str, pi: str, anyio_backend: str
) -> None:
    server = Server()
    server.faux = FauxProvider(tokens_per_second=20, token_size=(1, 1))
    server.faux.set_responses([faux_assistant_message("abcd" * 500)])
    async with serve_app(server, anyio_backend) as url:
        output = await run_ts_client(node, pi, url, TOKEN, "abort")
        with anyio.fail_after(10):
            await server.closed.wait()
    assert output["result"]["stopReason"] == "aborted"
    assert output["result"]["errorMessage"] == "Request aborted by user"
    assert server.aborted is True


# --- our client, their server ------------------------------------------------------------------


class TsServer:
    """``server.mjs`` of one version: its URL, and once it has stopped, the bodies it got."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.bodies: list[Any] = []


@asynccontextmanager
async def ts_server(node: str, pi: str) -> AsyncIterator[TsServer]:
    """Run a proxy server on pi-ai ``pi`` for the block; it stops when its stdin closes."""
    command = [node, "server.mjs", pi, TOKEN]
    with anyio.fail_after(NODE_DEADLINE):
        async with await anyio.open_process(command, cwd=INTEROP) as process:
            assert process.stdin is not None and process.stdout is not None
            async with aclosing(_lines(process.stdout)) as lines:
                server = TsServer(f"http://127.0.0.1:{json.loads(await anext(lines))['port']}")
                yield server
                await process.stdin.aclose()
                server.bodies = json.loads(await anext(lines))["bodies"]
            assert await process.wait() == 0


async def _lines(stream: Any) -> AsyncGenerator[str, None]:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()


async def _weather(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
    return f"sunny in {params['city']}"


WEATHER = AgentTool(
    "weather",
    "Look up the weather",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    _weather,
    label="Weather",
)


async def test_our_client_gives_a_ts_server_the_prompt_and_tools_in_its_eras_body(
    node: str, pi: str
) -> None:
    async with ts_server(node, pi) as server:
        agent = Agent(
            model=Model("faux-1", api="faux", provider="faux"),
            system_prompt=SYSTEM_PROMPT,
            tools=[WEATHER],
            stream_fn=ProxyStream(server.url, TOKEN, wire=WIRE[pi]),  # type: ignore[arg-type]
        )
        with anyio.fail_after(NODE_DEADLINE):
            await agent.prompt("Weather in Paris?")

    # Their model called our tool with its arguments, then said what it had been told.
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [result.content for result in results] == [[TextContent("sunny in Paris")]]
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "stop"
    block = last.content[0]
    assert isinstance(block, TextContent)
    told = ["system"] if pi == "1.6.0" else []
    assert json.loads(block.text) == {
        "systemPrompt": SYSTEM_PROMPT,
        "tools": ["weather"],
        "roles": [*told, "user", "assistant", "toolResult"],
    }
    first, second = (body["context"] for body in server.bodies)
    if pi == "1.6.0":
        assert set(first) == {"messages"}
        # The tool as the model sees it: no label, no execution mode.
        assert first["messages"][0]["toolsAdded"] == [
            {
                "name": "weather",
                "description": WEATHER.description,
                "parameters": WEATHER.parameters,
            }
        ]
    else:
        assert set(first) == {"systemPrompt", "messages", "tools"}
        assert all(message["role"] != "system" for message in second["messages"])


async def test_a_server_of_the_old_era_cannot_read_the_current_body(node: str) -> None:
    # Why wire="0.73" exists: pi-ai 0.73.1 knows no system messages, and its faux model fails
    # on the one that leads the transcript.
    async with ts_server(node, "0.73.1") as server:
        agent = Agent(
            model=Model("faux-1", api="faux", provider="faux"),
            system_prompt=SYSTEM_PROMPT,
            tools=[WEATHER],
            stream_fn=ProxyStream(server.url, TOKEN),
        )
        with anyio.fail_after(NODE_DEADLINE):
            await agent.prompt("Weather in Paris?")
    (body,) = server.bodies
    assert set(body["context"]) == {"messages"}
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert (last.stop_reason, last.content) == ("error", [])
