"""What the UI servers refuse and what they never say, over real HTTP on 127.0.0.1 on both
backends: the bearer token on every endpoint, CORS only when configured, the body cap, and error
texts without credentials."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import anyio
import httpx
import pytest

from asgi_server import serve_on_localhost
from pi_core import Agent, AssistantMessageEvent, Context, Model, StreamOptions, tool
from pi_core.testing import ScriptedStream, scripted_reply
from pi_core.ui import ag_ui_app, web_app
from ui.ui_support import AgentRecorder

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
RUN_INPUT = {
    "threadId": "t1",
    "runId": "r1",
    "state": {},
    "messages": [{"id": "u1", "role": "user", "content": "2+2"}],
    "tools": [],
    "context": [],
    "forwardedProps": {},
}
ENDPOINTS = [
    ("GET", "/api/info"),
    ("POST", "/api/agui"),
    ("POST", "/api/threads/t1/steer"),
    ("POST", "/api/threads/t1/abort"),
]


def sse_events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
async def test_no_endpoint_answers_without_the_token(
    anyio_backend: str, method: str, path: str
) -> None:
    app = web_app(agent_factory=AgentRecorder(), auth_token=TOKEN)
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        missing = await client.request(method, path, json=RUN_INPUT)
        wrong = await client.request(
            method, path, json=RUN_INPUT, headers={"Authorization": "Bearer nope"}
        )
        basic = await client.request(
            method, path, json=RUN_INPUT, headers={"Authorization": f"Basic {TOKEN}"}
        )
    for refused in (missing, wrong, basic):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in refused.text and "pi-core" not in refused.text


async def test_the_page_loads_without_the_token_and_holds_no_data(anyio_backend: str) -> None:
    app = web_app(agent_factory=AgentRecorder(), auth_token=TOKEN, title="the team's agent")
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        page = await client.get("/")
        posted = await client.post("/", json=RUN_INPUT)  # only a GET of the page is open
        info = await client.get("/api/info")
    assert page.status_code == 200 and 'id="sign-in"' in page.text
    assert TOKEN not in page.text
    assert posted.status_code == 401 and info.status_code == 401


async def test_the_token_opens_every_endpoint(anyio_backend: str) -> None:
    app = web_app(agent_factory=AgentRecorder(), auth_token=f"{TOKEN}\n")  # a token file's newline
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url, headers=headers) as client,
    ):
        page = await client.get("/")
        info = await client.get("/api/info")
        run = await client.post("/api/agui", json=RUN_INPUT)
    assert page.status_code == 200 and "<title>pi-core</title>" in page.text
    assert info.json() == {"chat": True, "runs": False}
    assert sse_events(run.text)[-1]["type"] == "RUN_FINISHED"


async def test_the_ag_ui_app_wants_the_token_too(anyio_backend: str) -> None:
    app = ag_ui_app(AgentRecorder(), auth_token=TOKEN)
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        refused = await client.post("/", json=RUN_INPUT)
        served = await client.post(
            "/", json=RUN_INPUT, headers={"Authorization": f"Bearer {TOKEN}"}
        )
    assert refused.status_code == 401
    assert served.status_code == 200 and served.headers["content-type"].startswith(
        "text/event-stream"
    )


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        web_app(agent_factory=AgentRecorder(), auth_token="  \n")


async def test_cors_is_off_unless_configured(anyio_backend: str) -> None:
    origin = {"Origin": "https://app.example"}
    closed = web_app(agent_factory=AgentRecorder())
    opened = web_app(agent_factory=AgentRecorder(), cors_origins=["https://app.example"])
    async with (
        serve_on_localhost(closed, anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        plain = await client.get("/api/info", headers=origin)
    async with (
        serve_on_localhost(opened, anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        allowed = await client.get("/api/info", headers=origin)
        preflight = await client.options(
            "/api/agui", headers={**origin, "Access-Control-Request-Method": "POST"}
        )
    assert "access-control-allow-origin" not in plain.headers
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert preflight.status_code == 200


async def test_a_body_over_the_cap_is_refused(anyio_backend: str) -> None:
    app = ag_ui_app(AgentRecorder(), max_body_bytes=2000)
    big = {**RUN_INPUT, "messages": [{"id": "u1", "role": "user", "content": "x" * 5000}]}
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        declared = await client.post("/", json=big)
        fits = await client.post("/", json=RUN_INPUT)
    assert declared.status_code == 413 and "limit 2000 bytes" in declared.json()["error"]
    assert fits.status_code == 200


async def test_a_body_without_a_length_is_counted_as_it_arrives() -> None:
    app = ag_ui_app(AgentRecorder(), max_body_bytes=2000)
    chunks = [{"type": "http.request", "body": b"x" * 900, "more_body": True}] * 3
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if chunks:
            return chunks.pop(0)
        await anyio.sleep_forever()  # the client stalls: only the cap can end the request
        raise AssertionError

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    with anyio.fail_after(10):
        await app(scope, receive, send)
    assert sent[0]["status"] == 413
    assert chunks == []  # all three were read: the third crossed the cap


async def test_bad_input_gets_a_short_answer(anyio_backend: str) -> None:
    app = ag_ui_app(AgentRecorder())
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        not_json = await client.post(
            "/", content=b"{nope", headers={"content-type": "application/json"}
        )
        not_input = await client.post("/", json={"messages": 3})
        nothing = await client.post("/", json={**RUN_INPUT, "messages": []})
    assert not_json.status_code == 400
    assert not_input.status_code == 422 and "Invalid RunAgentInput" in not_input.json()["error"]
    assert nothing.status_code == 422 and "empty" in nothing.json()["error"]


def leaky_agent() -> Agent:
    """A model whose call fails quoting a key, and a tool whose error quotes one."""

    @tool
    async def fetch_page(url: str) -> str:
        """Fetch a page."""
        raise RuntimeError(f"GET {url} failed with Authorization: Bearer {KEY}")

    replies = ScriptedStream(
        [
            scripted_reply(
                *[__import__("pi_core").ToolCall("c1", "fetch_page", {"url": "https://x.example"})]
            )
        ]
    )

    def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        if any(m.role == "toolResult" for m in context.messages):
            raise RuntimeError(f"upstream refused the key {KEY}")
        return replies(model, context, options)

    return Agent(model=replies.model, stream_fn=stream, tools=[fetch_page])


async def test_error_texts_carry_no_credentials(anyio_backend: str) -> None:
    async with (
        serve_on_localhost(ag_ui_app(leaky_agent), anyio_backend) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        answer = await client.post("/", json=RUN_INPUT)
    events = sse_events(answer.text)
    assert KEY not in answer.text
    [result] = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert "[redacted]" in result["content"]
    assert events[-1]["type"] == "RUN_ERROR" and "[redacted]" in events[-1]["message"]
