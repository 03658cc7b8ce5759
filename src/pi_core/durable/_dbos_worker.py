"""A worker: launches DBOS in this process, recovers its own unfinished runs, serves the queue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from dbos import DBOS, DBOSConfig, SetWorkflowID

from ._dbos_logs import filtered_dbos_log
from ._dbos_names import (
    AGENTS_WORKFLOW,
    QUEUE,
    agents_workflow_id,
    check_database_url,
    masked,
)
from ._dbos_run import Serving, serve
from ._record import MAX_RESULT_BYTES
from ._spec import DurableAgents, DurableError

__all__ = ["open_worker"]

_QUEUE_POLLING_SECONDS = 0.1
"""How often a worker looks for queued runs: the most a new run waits before it starts."""


@DBOS.workflow(name=AGENTS_WORKFLOW)
async def _announce_agents(names: list[str]) -> list[str]:
    """Records which agents a worker serves, so that a client can tell an unknown name at once."""
    return names


@asynccontextmanager
async def open_worker(
    agents: DurableAgents,
    database_url: str,
    *,
    executor_id: str,
    concurrency: int = 25,
    app_version: str | None = None,
    max_result_bytes: int = MAX_RESULT_BYTES,
) -> AsyncIterator[None]:
    """Serve durable runs of ``agents`` from this process until the block exits.

    Launches DBOS (one worker per process), which first recovers the runs this ``executor_id``
    left unfinished, then takes runs from the queue, at most ``concurrency`` at once.

    Args:
        agents: the agent definitions; the same code on every worker.
        database_url: ``sqlite:///path`` (one machine) or ``postgresql://...`` (many workers).
        executor_id: this worker's stable name; a restarted worker must use its old one to
            recover its runs. Two live workers must never share one.
        concurrency: how many runs this worker executes at once.
        app_version: the version of the agents' code. Workers serve and recover only runs of
            their own version; set it explicitly and change it when the agents change.
        max_result_bytes: the largest tool result a run records, in bytes of its JSON; a larger
            one is replaced by an error result saying so.

    Raises:
        DurableError: the database cannot be reached or is neither SQLite nor Postgres,
            ``agents`` defines no agent, or this is not asyncio.
        ValueError: ``executor_id`` is empty, or ``concurrency`` or ``max_result_bytes`` is not
            positive.
    """
    _require_asyncio()
    check_database_url(database_url)
    if not agents.names:
        raise DurableError("the DurableAgents defines no agent: a worker would serve nothing")
    if not executor_id:
        raise ValueError("a worker needs an explicit executor_id (stable across restarts)")
    if concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, not {concurrency!r}")
    if max_result_bytes < 1:
        raise ValueError(f"max_result_bytes must be a positive int, not {max_result_bytes!r}")
    serve(Serving(agents, max_result_bytes))
    config: DBOSConfig = {
        "name": "pi_core",
        "system_database_url": database_url,
        "executor_id": executor_id,
        "notification_listener_polling_interval_sec": 0.1,
        "log_level": "WARNING",  # DBOS's own log: its start-up banner is noise in a worker
    }
    if app_version is not None:
        config["application_version"] = app_version
    with filtered_dbos_log():
        _launch(config, database_url)
        try:
            await DBOS.register_queue_async(
                QUEUE,
                worker_concurrency=concurrency,
                polling_interval_sec=_QUEUE_POLLING_SECONDS,
                on_conflict="always_update",
            )
            await _announce(agents, executor_id)
            yield
        finally:
            serve(None)
            DBOS.destroy(workflow_completion_timeout_sec=0)


def _launch(config: DBOSConfig, database_url: str) -> None:
    # DBOS.launch runs in the event loop's thread: DBOS then runs the workflows on this loop.
    try:
        DBOS(config=config)
        DBOS.launch()
    except Exception as exc:
        DBOS.destroy(workflow_completion_timeout_sec=0)
        raise DurableError(f"cannot open the database {masked(database_url)}: {exc}") from exc


async def _announce(agents: DurableAgents, executor_id: str) -> None:
    names = agents.names
    version: Any = DBOS.application_version
    with SetWorkflowID(agents_workflow_id(str(version), executor_id, names)):
        await _announce_agents(names)


def _require_asyncio() -> None:
    # No asyncio loop is running under trio: DBOS's workflows cannot run there.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise DurableError(
            "a durable worker runs on asyncio only: DBOS workflows are asyncio"
        ) from None
