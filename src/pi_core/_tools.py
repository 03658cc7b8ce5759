"""Tools the agent can run: :class:`AgentTool` and the :class:`AgentToolResult` it returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

import attrs

from ._messages import ImageContent, TextContent, Tool
from .nursery import AbortSignal

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "ToolExecute",
    "ToolExecutionMode",
    "ToolUpdateCallback",
]

ToolExecutionMode = Literal["sequential", "parallel"]


@attrs.frozen
class AgentToolResult:
    """What a tool returns: content for the model, details for the app, and a stop hint."""

    content: list[TextContent | ImageContent] = attrs.field(hash=False)
    details: Any = attrs.field(default=None, hash=False)
    terminate: bool = False
    """Ask to stop after this batch; it takes effect only when every result of the batch asks."""


ToolUpdateCallback = Callable[[AgentToolResult], None]
"""``on_update(partial)``: report progress; synchronous, never blocks the tool."""


class ToolExecute(Protocol):
    """The signature of :attr:`AgentTool.execute`."""

    def __call__(
        self,
        tool_call_id: str,
        params: Any,
        signal: AbortSignal,
        on_update: ToolUpdateCallback,
        /,
    ) -> Awaitable[AgentToolResult | str]: ...


def _label_default(tool: AgentTool) -> str:
    return tool.name


def _check_timeout(_tool: AgentTool, _attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, not {value!r}")


@attrs.frozen
class AgentTool(Tool):
    """A :class:`Tool` the agent can execute.

    ``execute(tool_call_id, params, signal, on_update)`` is awaited with the validated arguments;
    it may return an :class:`AgentToolResult` or a plain ``str`` (shorthand for one text block).
    It should raise on failure: the loop turns the exception into an error result.
    """

    execute: ToolExecute = attrs.field(kw_only=False, eq=False, hash=False)
    label: str = attrs.field(default=attrs.Factory(_label_default, takes_self=True))
    """A human-readable name for user interfaces."""
    prepare_arguments: Callable[[Any], Any] | None = attrs.field(default=None, eq=False)
    """Runs on the raw arguments before validation: a shim for older argument shapes."""
    execution_mode: ToolExecutionMode | None = None
    """``"sequential"`` makes every batch that calls this tool run sequentially."""
    timeout: float | None = attrs.field(default=None, validator=_check_timeout)
    """Seconds; on expiry the call ends as an error result and its siblings keep running."""
