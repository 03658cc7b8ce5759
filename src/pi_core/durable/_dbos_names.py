"""Names shared by the worker and the client of durable runs on DBOS."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import make_url

from ._spec import DurableError

__all__ = [
    "ABORT",
    "AGENTS_WORKFLOW",
    "COMPACTION_STEP",
    "DECISION",
    "EVENTS",
    "FOLLOW_UP",
    "PENDING",
    "QUEUE",
    "STEER",
    "STOP",
    "TRANSCRIPT",
    "WORKFLOW",
    "agents_workflow_id",
    "check_database_url",
    "masked",
]

WORKFLOW = "pi_core.durable.run"
"""The workflow of every durable run."""
QUEUE = "pi_core_runs"
EVENTS = "events"
"""The key of a run's event stream."""
STEER, FOLLOW_UP, ABORT, DECISION = "steer", "follow_up", "abort", "decision"
"""The topics of the messages a client sends a run."""
STOP = "stop"
"""The topic of a graceful stop (and its grace), which a run watches while it runs."""
PENDING = "pending"
"""The key of the event that lists a run's tool calls waiting for a decision."""
COMPACTION_STEP = "compaction"
"""The name of the step that asks for a compaction's summary."""
TRANSCRIPT = "transcript"
"""The key of the event holding the transcript a run that compacted ended with."""

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


_BACKENDS = ("sqlite", "postgresql", "postgres")
"""The databases DBOS keeps durable runs in: the URL schemes (with any driver) it accepts."""


def check_database_url(database_url: str) -> None:
    """Refuse a URL of another database than SQLite or Postgres (DBOS would take any URL that
    is not SQLite for Postgres).

    Raises:
        DurableError: the URL names another database, or is no URL.
    """
    try:
        backend = make_url(database_url).get_backend_name()
    except Exception:
        raise DurableError(
            f"not a database URL: {masked(database_url)}; durable runs take "
            "sqlite:///path or postgresql://user@host/db"
        ) from None
    if backend not in _BACKENDS:
        raise DurableError(
            f"durable runs keep their records in SQLite or Postgres, not {backend}: "
            f"{masked(database_url)}; use sqlite:///path or postgresql://user@host/db"
        )
