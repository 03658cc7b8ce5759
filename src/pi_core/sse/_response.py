"""What :func:`agent_events_response` checks before it builds the response."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import Agent, AgentBusyError, AgentMessage
from ..lowlevel import install_hint
from ..serialization import dumps

if TYPE_CHECKING:
    from starlette.responses import Response

__all__ = ["DEFAULT_BUFFER_SIZE", "agent_events_response", "sse_data"]

DEFAULT_BUFFER_SIZE = 16
"""How many events wait for a slow client before the run waits for it."""


def sse_data(event: object) -> str:
    """One Server-Sent Event carrying ``event`` as JSON (:mod:`pi_core.serialization`)."""
    return f"data: {dumps(event)}\n\n"  # JSON text has no raw newline to split the line


def agent_events_response(
    agent: Agent,
    prompt: str | AgentMessage | Sequence[AgentMessage],
    *,
    buffer_size: int = DEFAULT_BUFFER_SIZE,
) -> Response:
    """A ``text/event-stream`` response that runs ``agent.prompt(prompt)`` while it streams the
    run's events, one :func:`sse_data` line each, and ends with the run.

    The run lives exactly as long as the response: when the client goes away the run is
    cancelled (the agent stays usable, as after any cancellation from outside). A slow client
    slows the run down instead of letting events pile up: at most ``buffer_size`` wait.

    An Agent runs one prompt at a time and keeps one transcript: give each conversation its own
    Agent, and never share one between concurrent requests.

    Raises:
        AgentBusyError: ``agent`` is running a prompt already (answer such a request with 409).
        ImportError: Starlette (the ``server`` extra) is not installed.
    """
    if agent.state.is_streaming:
        raise AgentBusyError("The agent is running a prompt already: one Agent per conversation")
    try:
        from ._starlette import AgentEventsResponse
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("starlette"):
            raise
        raise ImportError(
            f"agent_events_response needs starlette: {install_hint('server')}"
        ) from None
    return AgentEventsResponse(agent, prompt, buffer_size)
