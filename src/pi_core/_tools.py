"""Tools the agent can run: :class:`AgentTool` and the :class:`AgentToolResult` it returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeAlias

import attrs

from ._messages import ImageContent, TextContent, Tool, ToolCall, Usage
from .nursery import AbortSignal

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "RequiresApproval",
    "ToolExecute",
    "ToolExecutionMode",
    "ToolReconcile",
    "ToolReplay",
    "ToolUpdateCallback",
    "prepared_call",
]

ToolExecutionMode = Literal["sequential", "parallel"]

RequiresApproval: TypeAlias = bool | Callable[[Any], bool | str | None]
"""``AgentTool.requires_approval``: a flag, or a sync function of the validated arguments that
says whether a call needs approval; a ``str`` it returns means yes, and is the reason."""
ToolReplay = Literal["safe", "never"]
"""``AgentTool.replay``: whether a call cut short by a crash may simply run again."""


@attrs.frozen
class AgentToolResult:
    """What a tool returns: content for the model, details for the app, and a stop hint."""

    content: list[TextContent | ImageContent] = attrs.field(hash=False)
    details: Any = attrs.field(default=None, hash=False)
    terminate: bool = False
    """Ask to stop after this batch; it takes effect only when every result of the batch asks."""
    usage: Usage | None = attrs.field(default=None, kw_only=True, hash=False)
    """What the tool itself spent on models (a sub-agent's run, say): kept on the tool result
    message, and added to the run's :attr:`~pi_core.RunResult.usage`."""
    nested_calls: dict[str, Any] | None = attrs.field(default=None, kw_only=True, hash=False)
    """The calls the tool made of other tools, as the tool result message records them."""
    is_error: bool = attrs.field(default=False, kw_only=True)
    """A failure reported without raising: the call ends as an error result, with this
    content (``tool_execution_end(is_error=True)``, ``ToolResultMessage(is_error=True)``)."""


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
    ) -> Awaitable[object]:
        """Awaited with the validated arguments; what it returns is described on
        :class:`AgentTool` (an :class:`AgentToolResult`, a ``str``, or a JSON value)."""
        ...


ToolReconcile = Callable[[str, Any], Awaitable["AgentToolResult | None"]]
"""``reconcile(tool_call_id, args)``: look up whether an interrupted call took effect; its
result if it did, ``None`` if that cannot be told."""


def _label_default(tool: AgentTool) -> str:
    return tool.name


def _check_timeout(_tool: AgentTool, _attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, not {value!r}")


@attrs.frozen
class AgentTool(Tool):
    """A :class:`Tool` the agent can execute.

    ``execute(tool_call_id, params, signal, on_update)`` is awaited with the validated arguments.
    It may return an :class:`AgentToolResult`; a plain ``str`` is shorthand for one text block;
    any other value (a dict, a list, a number, a bool, ``None``, an attrs or dataclass instance)
    is shorthand for one text block of its JSON, on one line, with the value itself as
    ``details``. A value JSON cannot carry makes the call an error result that says so. It
    raises on failure (the loop turns the exception into an error result, and logs it), or
    returns an :class:`AgentToolResult` with ``is_error=True`` to fail with content of its own.
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
    requires_approval: RequiresApproval = attrs.field(default=False, eq=False)
    """Whether a call waits for a decision (``Agent.resolve``) before it runs: a flag, or a sync
    function of the validated arguments (a ``str`` it returns means yes, and is the reason).
    A function that raises makes that call an error result."""
    replay: ToolReplay = attrs.field(
        default="safe", validator=attrs.validators.in_(("safe", "never"))
    )
    """Whether a durable run may run a call again that its worker died in the middle of:
    ``"safe"`` (the default) runs it again; ``"never"`` asks :attr:`reconcile`, and without an
    answer holds the call for a person's decision. In-process runs never run a call twice."""
    reconcile: ToolReconcile | None = attrs.field(default=None, eq=False)
    """For a ``replay="never"`` tool: awaited with the id and arguments of a call that was
    interrupted, to find out whether it took effect (look the payment up by the call's id).
    A result it returns is the call's result; ``None`` leaves the call in doubt."""


def prepared_call(tool: AgentTool, call: ToolCall) -> ToolCall:
    """``call`` with its arguments passed through the tool's ``prepare_arguments``, if any."""
    if tool.prepare_arguments is None:
        return call
    arguments = tool.prepare_arguments(call.arguments)
    if arguments is call.arguments:
        return call
    return attrs.evolve(call, arguments=arguments)
