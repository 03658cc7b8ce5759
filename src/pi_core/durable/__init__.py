"""Durable runs: a run survives its process and spreads over workers, on DBOS Transact.

* :class:`AgentSpec` and :class:`DurableAgents` — what an agent is, by name: the same code on
  every worker.
* :func:`open_worker` — serve runs from this process (asyncio only: DBOS workflows are asyncio).
* :class:`DurableRuns` — start, steer, watch, abort, cancel and resume runs from any process
  (asyncio or trio); it needs no agent code.

A run is one DBOS workflow around the ordinary loop: each model call and each tool call is a step
whose outcome the database records, so a worker killed at any moment loses nothing that had
finished. ``sqlite:///file`` serves one machine; ``postgresql://...`` lets many workers share the
queue. Installed with the ``durable`` extra.
"""

from __future__ import annotations

from .._public import publish_module_names
from ._dbos_client import DurableRuns
from ._dbos_worker import open_worker
from ._spec import (
    AgentFactory,
    AgentSpec,
    DurableAgents,
    DurableError,
    RunFailedError,
    RunState,
    RunStatus,
    UnknownAgentError,
    UnknownRunError,
)

__all__ = (
    "AgentFactory",
    "AgentSpec",
    "DurableAgents",
    "DurableError",
    "DurableRuns",
    "RunFailedError",
    "RunState",
    "RunStatus",
    "UnknownAgentError",
    "UnknownRunError",
    "open_worker",
)

publish_module_names(globals(), __all__, __name__)
