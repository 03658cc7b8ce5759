"""``ag_ui_app``: an Agent behind the AG-UI protocol, as an ASGI application (Starlette)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from .. import Agent
from ._ag_ui_events import AgUiMapper
from ._ag_ui_input import InputError, plan_run
from ._ag_ui_stream import AgUiEncoder, start_plan
from ._http import (
    DEFAULT_MAX_BODY_BYTES,
    Refused,
    check_token,
    error_response,
    guarded,
    read_json,
)
from ._redaction import public_text
from ._response import RunResponse

__all__ = ["ag_ui_app", "ag_ui_response", "parse_run_input"]


def ag_ui_app(
    agent_factory: Callable[[], Agent],
    *,
    auth_token: str | None = None,
    cors_origins: Sequence[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> ASGIApp:
    """An ASGI app that runs an Agent for each AG-UI ``RunAgentInput`` POSTed to its root.

    Each request gets a fresh Agent from ``agent_factory``; the client's ``messages`` are its
    transcript (tool results included). A last user message is the prompt; last tool results
    continue the run; ``resume`` entries answer the approvals the previous run waited for. The
    answer is a ``text/event-stream`` of AG-UI events, from ``RUN_STARTED`` to ``RUN_FINISHED``
    or ``RUN_ERROR``; a client that disconnects cancels its run.

    Args:
        agent_factory: makes the Agent of one request (its model, tools, system prompt).
        auth_token: when given, every request needs ``Authorization: Bearer <token>``
            (compared in constant time), else 401.
        cors_origins: the origins of browser apps allowed to call it (``["*"]`` for any);
            ``None`` sends no CORS headers.
        max_body_bytes: a larger request body is refused with 413.

    Raises:
        ValueError: ``auth_token`` is empty.
    """
    token = check_token(auth_token)

    async def run(request: Request) -> Response:
        try:
            run_input = parse_run_input(await read_json(request, max_body_bytes))
        except Refused as error:
            return error_response(error.status, error.message)
        return ag_ui_response(agent_factory(), run_input)

    app = Starlette(routes=[Route("/", run, methods=["POST"])])
    return guarded(app, token, cors_origins)


def parse_run_input(data: object) -> RunAgentInput:
    """The AG-UI input in a request's JSON.

    Raises:
        Refused: 422 when it is not a ``RunAgentInput``.
    """
    try:
        return RunAgentInput.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise Refused(422, public_text(f"Invalid RunAgentInput: {problems}")) from None


def ag_ui_response(agent: Agent, run_input: RunAgentInput) -> Response:
    """The streamed AG-UI answer to ``run_input``, run on ``agent`` (whose transcript becomes the
    input's messages); a 422 JSON answer when the input asks for nothing that can run."""
    try:
        plan = plan_run(run_input, agent.model)
    except InputError as exc:
        return error_response(422, public_text(str(exc)))
    mapper = AgUiMapper(run_input.thread_id, run_input.run_id)
    return RunResponse(agent, start_plan(agent, plan), AgUiEncoder(mapper))
