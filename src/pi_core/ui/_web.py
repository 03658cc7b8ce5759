"""``web_app``: the run viewer page and the small JSON API behind it.

The page chats with Agents the server keeps, one per conversation (the page's thread id), so
that steering, a follow-up, a stop or an abort reach the run in flight. Its runs stream over the
AG-UI endpoint (``POST /api/agui``). With ``runs`` (a :class:`~pi_core.durable.DurableRuns`) it
also lists the durable runs, follows one from any offset and acts on it.

Routes:

* ``GET /``: the page (one HTML document, its script and style inline).
* ``GET /api/info``: what the server offers (chat, durable runs).
* ``POST /api/agui``: an AG-UI ``RunAgentInput`` for the conversation ``threadId``: its last user
  message is the prompt, or its ``resume`` entries are the decisions on the pending approvals.
* ``POST /api/threads/{id}/{steer|follow_up|stop|abort}``: ``{"text": ...}`` for the first two,
  ``{"grace": seconds}`` optionally for ``stop``.
* ``GET /api/runs``, ``GET /api/runs/{id}/events?after=N`` (AG-UI events as Server-Sent Events,
  each with its offset as the event id), ``GET /api/runs/{id}/pending``,
  ``POST /api/runs/{id}/{steer|follow_up|stop|abort|approve|deny}``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from .. import Agent, UserMessage
from ._ag_ui_app import parse_run_input
from ._ag_ui_events import AgUiMapper
from ._ag_ui_input import InputError, RunPlan, convert_messages, plan_run
from ._ag_ui_stream import AgUiEncoder, start_plan
from ._durable_view import DurableView, RunsClient
from ._http import (
    DEFAULT_MAX_BODY_BYTES,
    Refused,
    check_token,
    error_response,
    guarded,
    read_json,
)
from ._page import page_html
from ._redaction import public_text
from ._response import RunResponse

__all__ = ["MAX_THREADS", "web_app"]

MAX_THREADS = 64
"""Conversations kept at once; past it the longest idle one is forgotten."""


def web_app(
    *,
    agent_factory: Callable[[], Agent] | None = None,
    runs: RunsClient | None = None,
    auth_token: str | None = None,
    cors_origins: Sequence[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    title: str = "pi-core",
) -> ASGIApp:
    """The run viewer page and its API, as an ASGI app (Starlette).

    Args:
        agent_factory: makes the Agent of each new conversation of the page; ``None``: no chat.
        runs: a :class:`~pi_core.durable.DurableRuns` whose runs the page lists and follows.
        auth_token: when given, every request of the API needs ``Authorization: Bearer
            <token>`` (compared in constant time), else 401; the page itself, which holds no
            data, asks the person for the token and keeps it in the browser tab.
        cors_origins: origins allowed to call the API from other pages; ``None``: no CORS.
        max_body_bytes: a larger request body is refused with 413.
        title: the page's title.

    Raises:
        ValueError: ``auth_token`` is empty.
    """
    token = check_token(auth_token)
    server = _WebServer(agent_factory, runs, max_body_bytes, title)
    routes = [
        Route("/", server.page, methods=["GET"]),
        Route("/api/info", server.info, methods=["GET"]),
        Route("/api/agui", server.agui, methods=["POST"]),
        Route("/api/threads/{thread}/{action}", server.thread_action, methods=["POST"]),
    ]
    if runs is not None:
        view = DurableView(runs, max_body_bytes)
        routes += view.routes()
    # The page is the same document for everybody and holds no data: a browser loads it without
    # the token, and it asks for the token before its first call of the API.
    return guarded(Starlette(routes=routes), token, cors_origins, open_paths=frozenset({"/"}))


class _WebServer:
    """The chat side of the page: one Agent per conversation."""

    def __init__(
        self,
        agent_factory: Callable[[], Agent] | None,
        runs: RunsClient | None,
        max_body_bytes: int,
        title: str,
    ) -> None:
        self.agent_factory = agent_factory
        self.has_runs = runs is not None
        self.max_body_bytes = max_body_bytes
        self.title = title
        self.threads: OrderedDict[str, Agent] = OrderedDict()

    async def page(self, request: Request) -> Response:
        return HTMLResponse(page_html(self.title), headers={"Cache-Control": "no-store"})

    async def info(self, request: Request) -> Response:
        return JSONResponse({"chat": self.agent_factory is not None, "runs": self.has_runs})

    async def agui(self, request: Request) -> Response:
        try:
            run_input = parse_run_input(await read_json(request, self.max_body_bytes))
            agent = self._agent(run_input.thread_id)
            plan = _plan(run_input, agent)
        except Refused as error:
            return error_response(error.status, error.message)
        mapper = AgUiMapper(run_input.thread_id, run_input.run_id)
        return RunResponse(agent, start_plan(agent, plan), AgUiEncoder(mapper))

    async def thread_action(self, request: Request) -> Response:
        thread = request.path_params["thread"]
        action = request.path_params["action"]
        agent = self.threads.get(thread)
        if agent is None:
            return error_response(404, f"No conversation {thread!r}")
        try:
            body = await read_json(request, self.max_body_bytes) if action != "abort" else {}
            _act(agent, action, body if isinstance(body, dict) else {})
        except Refused as error:
            return error_response(error.status, error.message)
        return JSONResponse({"ok": True})

    def _agent(self, thread: str) -> Agent:
        if self.agent_factory is None:
            raise Refused(404, "This server has no chat: it shows durable runs only")
        agent = self.threads.get(thread)
        if agent is None:
            agent = self.agent_factory()
            self.threads[thread] = agent
            self._forget_idle()
        self.threads.move_to_end(thread)
        if agent.state.is_streaming:
            raise Refused(409, "The conversation is running: steer it, or stop it first")
        return agent

    def _forget_idle(self) -> None:
        for thread in list(self.threads)[: max(0, len(self.threads) - MAX_THREADS)]:
            if not self.threads[thread].state.is_streaming:
                del self.threads[thread]


def _plan(run_input: Any, agent: Agent) -> RunPlan:
    """The page's run: the server keeps the transcript, so only the new message is read."""
    if run_input.resume:
        try:
            plan = plan_run(run_input, agent.model)
        except InputError as exc:
            raise Refused(422, public_text(str(exc))) from None
        return RunPlan("resolve", list(agent.messages), decisions=plan.decisions)
    new = convert_messages(run_input.messages[-1:], agent.model)
    if not new or not isinstance(new[-1], UserMessage):
        raise Refused(422, "The last message must be the user's")
    return RunPlan("prompt", list(agent.messages), prompt=new[-1])


def _act(agent: Agent, action: str, body: dict[str, Any]) -> None:
    text = body.get("text")
    if action in ("steer", "follow_up"):
        if not isinstance(text, str) or not text.strip():
            raise Refused(422, 'Send {"text": "..."}')
        (agent.steer if action == "steer" else agent.follow_up)(text)
    elif action == "abort":
        agent.abort()
    elif action == "stop":
        grace = body.get("grace")
        agent.stop(grace=grace if isinstance(grace, (int, float)) else None)
    else:
        raise Refused(404, f"No action {action!r}")
