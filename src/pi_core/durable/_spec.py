"""What a durable agent is, the registry of agents a worker serves, and what a run's status says.

None of this depends on an engine: an engine module turns an :class:`AgentSpec` into a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from .._exceptions import PiCoreError
from .._hooks import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
    MaybeAwaitable,
    NextTurn,
    ToolExecution,
    TurnContext,
    check_max_parallel_tools,
    check_tool_execution,
    default_convert_to_llm,
)
from .._messages import AgentMessage, Message, Model
from .._options import StreamFn, StreamOptions
from .._queue import QueueMode, check_queue_mode
from .._tools import AgentTool
from ..nursery import AbortSignal

__all__ = [
    "AgentFactory",
    "AgentSpec",
    "DurableAgents",
    "DurableError",
    "RunFailedError",
    "RunState",
    "RunStatus",
    "UnknownAgentError",
    "UnknownRunError",
]

RunState: TypeAlias = Literal["pending", "running", "success", "error", "cancelled"]


class DurableError(PiCoreError):
    """Raised by durable runs for a problem of the setup: the database, a name, an id."""


class UnknownAgentError(DurableError, LookupError):
    """No agent of that name is defined (on the worker) or served (as far as the client knows)."""


class UnknownRunError(DurableError, LookupError):
    """No run has that id in the database."""


class RunFailedError(DurableError):
    """The run ended in error or was cancelled, so it has no result."""


def _tool_tuple(tools: Iterable[AgentTool]) -> tuple[AgentTool, ...]:
    return tuple(tools)


@attrs.frozen
class AgentSpec:
    """One agent as a durable run needs it: what the loop and its context take.

    Hooks, ``convert_to_llm`` and ``transform_context`` run in the engine's replayed code: they
    must be deterministic (no I/O, no clock, no randomness); do such work in a tool or in the
    stream function, whose results are recorded.
    """

    model: Model
    stream_fn: StreamFn
    tools: Sequence[AgentTool] = attrs.field(default=(), converter=_tool_tuple)
    system_prompt: str = ""
    # The loop's options: by keyword only.
    convert_to_llm: Callable[[list[AgentMessage]], MaybeAwaitable[list[Message]]] = attrs.field(
        default=default_convert_to_llm, kw_only=True
    )
    transform_context: (
        Callable[[list[AgentMessage], AbortSignal], MaybeAwaitable[list[AgentMessage]]] | None
    ) = attrs.field(default=None, kw_only=True)
    get_api_key: Callable[[str], MaybeAwaitable[str | None]] | None = attrs.field(
        default=None, kw_only=True
    )
    should_stop_after_turn: Callable[[TurnContext], MaybeAwaitable[bool]] | None = attrs.field(
        default=None, kw_only=True
    )
    prepare_next_turn: Callable[[TurnContext], MaybeAwaitable[NextTurn | None]] | None = (
        attrs.field(default=None, kw_only=True)
    )
    before_tool_call: (
        Callable[[BeforeToolCallContext, AbortSignal], MaybeAwaitable[BeforeToolCallResult | None]]
        | None
    ) = attrs.field(default=None, kw_only=True)
    after_tool_call: (
        Callable[[AfterToolCallContext, AbortSignal], MaybeAwaitable[AfterToolCallResult | None]]
        | None
    ) = attrs.field(default=None, kw_only=True)
    tool_execution: ToolExecution = attrs.field(
        default="parallel",
        kw_only=True,
        validator=lambda _c, _a, value: check_tool_execution(value),
    )
    max_parallel_tools: int | None = attrs.field(
        default=None, kw_only=True, validator=lambda _c, _a, value: check_max_parallel_tools(value)
    )
    options: StreamOptions = attrs.field(factory=StreamOptions, kw_only=True)
    steering_mode: QueueMode = attrs.field(
        default="one-at-a-time",
        kw_only=True,
        validator=lambda _c, _a, value: check_queue_mode(value),
    )
    follow_up_mode: QueueMode = attrs.field(
        default="one-at-a-time",
        kw_only=True,
        validator=lambda _c, _a, value: check_queue_mode(value),
    )


AgentFactory: TypeAlias = Callable[[dict[str, Any]], AgentSpec]
"""``factory(params) -> AgentSpec``: builds an agent from the run's parameters."""


class DurableAgents:
    """Named agent definitions: code, the same on every worker.

    ``@agents.define("name")`` registers ``factory(params) -> AgentSpec``; each run calls it with
    the ``params`` it was started with (and calls it again when it is recovered).
    """

    def __init__(self) -> None:
        self._factories: dict[str, AgentFactory] = {}

    def define(self, name: str) -> Callable[[AgentFactory], AgentFactory]:
        """A decorator registering ``factory`` under ``name``.

        Raises:
            ValueError: ``name`` is empty or already defined.
        """
        if not name:
            raise ValueError("an agent needs a name")
        if name in self._factories:
            raise ValueError(f"agent {name!r} is already defined")

        def register(factory: AgentFactory) -> AgentFactory:
            self._factories[name] = factory
            return factory

        return register

    @property
    def names(self) -> list[str]:
        """The defined agents' names, sorted."""
        return sorted(self._factories)

    def build(self, name: str, params: dict[str, Any]) -> AgentSpec:
        """Call the factory of ``name`` with ``params``.

        Raises:
            UnknownAgentError: no agent of that name is defined.
            DurableError: the factory raised, or returned something else than an AgentSpec.
        """
        factory = self._factories.get(name)
        if factory is None:
            raise UnknownAgentError(f"unknown agent {name!r}; defined: {_listed(self.names)}")
        try:
            spec = factory(params)
        except Exception as exc:
            raise DurableError(f"the factory of agent {name!r} raised: {exc!r}") from exc
        if not isinstance(spec, AgentSpec):
            raise DurableError(
                f"the factory of agent {name!r} returned {type(spec).__name__}, not an AgentSpec"
            )
        return spec


def _listed(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names) or "none"


@attrs.frozen
class RunStatus:
    """Where a durable run is."""

    run_id: str
    agent: str
    state: RunState
    """``"pending"`` (queued), ``"running"``, ``"success"``, ``"error"`` or ``"cancelled"``."""
    executor_id: str | None
    """The worker that runs (or ran) it; ``None`` while it waits in the queue."""
    created_at: int
    """When it was started, in milliseconds since the epoch."""
