"""The AG-UI event stream of one run: :class:`AgUiEncoder`, and :func:`start_plan`, which starts
the run a client's input asks for on an Agent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ag_ui.core import BaseEvent

from .. import Agent, AgentEvent, RunResult
from ..lowlevel import current_system_message
from ._ag_ui_events import AgUiMapper
from ._ag_ui_input import InputError, RunPlan
from ._control import decisions_for, limit_json

__all__ = ["AgUiEncoder", "sse_event", "start_plan"]


def sse_event(event: BaseEvent) -> bytes:
    """One Server-Sent Event carrying ``event`` as the protocol's JSON (camelCase keys)."""
    return b"data: " + event.model_dump_json(by_alias=True).encode() + b"\n\n"


class AgUiEncoder:
    """The AG-UI events of one run, as Server-Sent Events (a :class:`RunEncoder`)."""

    def __init__(self, mapper: AgUiMapper) -> None:
        self.mapper = mapper

    def opening(self) -> list[bytes]:
        """``RUN_STARTED``."""
        return [sse_event(self.mapper.run_started())]

    def encode(self, event: AgentEvent) -> list[bytes]:
        """The AG-UI events of one agent event."""
        return [sse_event(e) for e in self.mapper.map(event)]

    def finished(self, result: RunResult) -> list[bytes]:
        """``RUN_ERROR`` for a failed or aborted run; else the limit and the pending approvals,
        then ``RUN_FINISHED``."""
        return [sse_event(e) for e in finish_events(self.mapper, result)]

    def failed(self, message: str) -> list[bytes]:
        """``RUN_ERROR`` with ``message``."""
        return [sse_event(self.mapper.run_error(message))]


def finish_events(mapper: AgUiMapper, result: RunResult) -> list[BaseEvent]:
    """The events that end a run that returned ``result``."""
    if result.outcome == "aborted":
        return [mapper.run_error(mapper.error or "aborted", code="aborted")]
    if result.error_message is not None:
        return [mapper.run_error(mapper.error or "the run failed", code="error")]
    return mapper.run_finished(
        pending=result.pending, limit=limit_json(result), result=result.text or None
    )


def start_plan(agent: Agent, plan: RunPlan) -> Callable[[], Awaitable[RunResult]]:
    """The run that ``plan`` asks for, on ``agent`` (whose transcript it sets).

    A client keeps no system messages: the Agent's own, its prompt and tools, stay in front of
    the client's history.
    """
    system = current_system_message(agent.messages)
    agent.messages = plan.history if system is None else [system, *plan.history]

    async def start() -> RunResult:
        if plan.action == "prompt":
            assert plan.prompt is not None
            return await agent.prompt(plan.prompt)
        if plan.action == "continue":
            return await agent.continue_()
        decisions: dict[str, Any] = decisions_for(plan.decisions)
        return await _resolve(agent, decisions)

    return start


async def _resolve(agent: Agent, decisions: dict[str, Any]) -> RunResult:
    if not decisions:
        raise InputError("no tool call of the messages waits for a decision")
    return await agent.resolve(decisions)
