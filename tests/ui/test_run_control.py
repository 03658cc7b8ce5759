"""Run control as the front ends see it, over HTTP on both backends: a limit that ends a run is a
custom AG-UI event and the UI message stream's finish metadata; calls held for approval are the
protocols' interrupts and approval requests."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from asgi_server import serve_on_localhost
from pi_core import Agent, RunLimits
from pi_core.ui import ag_ui_app, ui_message_stream_response
from ui.ui_support import approving_agent, check_ag_ui_grammar, demo_agent

pytestmark = pytest.mark.anyio

RUN_INPUT = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "sleep 0 and 2+2"}],
}


def one_turn() -> Agent:
    agent = demo_agent()
    agent.limits = RunLimits(max_turns=1)
    return agent


def data_lines(body: str) -> list[Any]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]


async def test_a_limit_ends_the_ag_ui_run_with_a_custom_event(anyio_backend: str) -> None:
    async with (
        serve_on_localhost(ag_ui_app(one_turn), anyio_backend) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        answer = await client.post("/", json=RUN_INPUT)
    events = data_lines(answer.text)
    check_ag_ui_grammar(events)
    [limit] = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "pi_core.limit"]
    assert limit == {"kind": "max_turns", "limit": 1, "value": 1}
    assert [e["stepName"] for e in events if e["type"] == "STEP_STARTED"] == ["turn 1"]
    assert events[-1]["type"] == "RUN_FINISHED"
    # The turn's calls still ran: the transcript stays continuable.
    assert len([e for e in events if e["type"] == "TOOL_CALL_RESULT"]) == 3


async def test_a_limit_is_in_the_finish_metadata_of_the_ui_message_stream(
    anyio_backend: str,
) -> None:
    async def chat(request: Request) -> Response:
        return ui_message_stream_response(one_turn(), "sleep 0 and 2+2")

    app = Starlette(routes=[Route("/chat", chat, methods=["POST"])])
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        answer = await client.post("/chat")
    finish = data_lines(answer.text)[-1]
    assert finish["type"] == "finish"
    assert finish["messageMetadata"]["outcome"] == "limit"
    assert finish["messageMetadata"]["limit"] == {"kind": "max_turns", "limit": 1, "value": 1}


async def test_held_calls_are_approval_requests_in_the_ui_message_stream(
    anyio_backend: str,
) -> None:
    async def chat(request: Request) -> Response:
        return ui_message_stream_response(approving_agent(), "delete my notes")

    app = Starlette(routes=[Route("/chat", chat, methods=["POST"])])
    async with (
        serve_on_localhost(app, anyio_backend) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        answer = await client.post("/chat")
    parts = data_lines(answer.text)
    [request] = [p for p in parts if p["type"] == "tool-approval-request"]
    [call] = [
        p for p in parts if p["type"] == "tool-input-available" and p["toolName"] == "delete_file"
    ]
    assert request["toolCallId"] == call["toolCallId"] and request["reason"] == "deletes notes.txt"
    assert parts[-1]["messageMetadata"]["outcome"] == "pending"
