"""Names shared by the worker and the client of durable runs on DBOS."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import make_url

__all__ = [
    "ABORT",
    "AGENTS_WORKFLOW",
    "EVENTS",
    "FOLLOW_UP",
    "QUEUE",
    "STEER",
    "WORKFLOW",
    "agents_workflow_id",
    "masked",
]

WORKFLOW = "pi_core.durable.run"
"""The workflow of every durable run."""
QUEUE = "pi_core_runs"
EVENTS = "events"
"""The key of a run's event stream."""
STEER, FOLLOW_UP, ABORT = "steer", "follow_up", "abort"
"""The topics of the messages a client sends a run."""

AGENTS_WORKFLOW = "pi_core.durable.agents"
"""The workflow by which a worker records the agents it serves."""


def agents_workflow_id(app_version: str, executor_id: str, names: Sequence[str]) -> str:
    return f"pi_core-agents:{app_version}:{executor_id}:{','.join(names)}"


def masked(database_url: str) -> str:
    """The URL without its password, for error messages."""
    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"
