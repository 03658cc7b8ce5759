"""Soak, in counts: 200 concurrent AG-UI streams through a real server, some read to the end,
some dropped by their client after a random number of events. Every stream completes or is cut
by its client; every run the server started ends (a dropped one aborted and closed out, each of
its tool calls answered); no request is left running. (Nothing here is timed.)"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest

from asgi_server import RequestsInFlight, serve_on_localhost
from pi_core import Agent, AgentEvent, AssistantMessage, ToolCall, ToolResultMessage
from pi_core.ui import ag_ui_app
from ui.ui_support import demo_agent

pytestmark = pytest.mark.anyio

CLIENTS = 200
PROMPT = "sleep 0.3 and 2+2"


class Ledger:
    """What the server side saw: runs started and ended, requests in flight."""

    def __init__(self) -> None:
        self.agents: list[Agent] = []
        self.started = 0
        self.ended = 0
        self.requests = RequestsInFlight(self._check_settled)
        self.settled = anyio.Event()

    def factory(self) -> Agent:
        agent = demo_agent()

        def count(event: AgentEvent) -> None:
            self.started += event.type == "agent_start"
            self.ended += event.type == "agent_end"

        agent.subscribe(count)
        self.agents.append(agent)
        return agent

    def _check_settled(self) -> None:
        if len(self.agents) == CLIENTS and not self.requests.count:
            self.settled.set()


def run_input(number: int) -> dict[str, Any]:
    message = {"id": f"u{number}", "role": "user", "content": PROMPT}
    return {"threadId": f"t{number}", "runId": f"r{number}", "state": {}, "messages": [message],
            "tools": [], "context": [], "forwardedProps": {}}  # fmt: skip


class RawStream:
    """One HTTP/1.1 request on its own socket, its chunked body read chunk by chunk: a client
    that can go away at any byte by closing the socket."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            self.buffer += await self.stream.receive()
        head, _, self.buffer = self.buffer.partition(marker)
        return head

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self.buffer += await self.stream.receive()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The body's chunks (one Server-Sent Event each, as the server sends them)."""
        head = await self.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        while size := int(await self.read_until(b"\r\n"), 16):
            yield await self.read_exactly(size)
            await self.read_exactly(2)


async def one_client(number: int, port: int, outcomes: dict[str, int]) -> None:
    """Read one run's stream to its end, or drop it after a random number of events."""
    rng = random.Random(number)
    cut_at = rng.randrange(1, 120) if rng.random() < 0.5 else None
    body = json.dumps(run_input(number)).encode()
    request = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    types: list[str] = []
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(request)
        reader = RawStream(stream)
        async with aclosing(reader.chunks()) as chunks:
            async for chunk in chunks:
                types.extend(
                    json.loads(line[6:])["type"]
                    for line in chunk.split(b"\n")
                    if line.startswith(b"data: ")
                )
                if cut_at is not None and len(types) >= cut_at:
                    outcomes["disconnected"] += 1
                    return  # the client goes away mid-stream: the socket closes
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    outcomes["completed"] += 1


def closed_out(agent: Agent) -> bool:
    """Every tool call of the transcript has its result (the calls of a reply cut by the abort
    never ran, and need none)."""
    replies = [m for m in agent.messages if isinstance(m, AssistantMessage)]
    complete = [m for m in replies if m.stop_reason not in ("aborted", "error")]
    calls = {c.id for m in complete for c in m.content if isinstance(c, ToolCall)}
    results = {m.tool_call_id for m in agent.messages if isinstance(m, ToolResultMessage)}
    return calls <= results


async def test_many_concurrent_ag_ui_streams_with_disconnects(anyio_backend: str) -> None:
    ledger = Ledger()
    app = ledger.requests.counting(ag_ui_app(ledger.factory))
    outcomes = {"completed": 0, "disconnected": 0}
    async with serve_on_localhost(app, anyio_backend) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            await http.get("/")  # any answer (a 405) means it serves
        port = int(url.rsplit(":", 1)[1])
        with anyio.fail_after(120):
            async with anyio.create_task_group() as clients:
                for number in range(CLIENTS):
                    clients.start_soon(one_client, number, port, outcomes)
        with anyio.fail_after(60):
            await ledger.settled.wait()  # every request the server took has returned
    assert sum(outcomes.values()) == CLIENTS
    assert all(count > 0 for count in outcomes.values()), outcomes
    assert len(ledger.agents) == ledger.started == ledger.ended == CLIENTS
    assert ledger.requests.count == 0
    assert not any(agent.state.is_streaming for agent in ledger.agents)
    assert all(closed_out(agent) for agent in ledger.agents)
    # A run ran to its end for each stream read to the end; the others were cut by their client.
    finished = [a for a in ledger.agents if getattr(a.messages[-1], "stop_reason", "") == "stop"]
    assert outcomes["completed"] <= len(finished) <= CLIENTS
