"""The ``@tool`` decorator: an :class:`AgentTool` from a typed function, ``async def`` or plain.

The parameters' annotations become the JSON Schema the model sees, the docstring its description,
and at call time the validated arguments are structured back into the annotated types (cattrs).

Decisions, documented here once (the types and their schemas: :mod:`pi_core._tool_schema`):

* Extra properties are allowed, as upstream allows them (no ``additionalProperties: false``);
  a key that names no parameter is ignored when the function is called.
* The description is the docstring's text before its first Google-style section (``Args:``,
  ``Returns:`` …); each ``Args:`` entry becomes its property's ``"description"``, unless the
  parameter's ``Annotated[T, "text"]`` gave one.
* The function's own default is what applies when the argument is left out.
* A plain ``def`` runs in a worker thread (``anyio.to_thread``), so it never blocks the event
  loop; ``thread=False`` runs it on the loop instead. A thread cannot be stopped: an abort or a
  timeout answers the call at once and leaves the thread to finish in the background, its
  outcome ignored (abandoned before its thread started, the function may not run at all). Its ``signal`` (when it takes one) is the call's own, aborted as soon as the
  call is abandoned for any reason, so a long function can poll ``signal.aborted`` and return.
  Its ``on_update`` may be called from the thread: the update is handed to the event loop, and
  dropped once the call has ended.
* What the function returns is what :class:`AgentTool` ``execute`` may return: a ``str``, an
  :class:`AgentToolResult`, or a JSON value (see ``_tool_result.py``).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Final, overload

import anyio
import anyio.from_thread
import anyio.to_thread
import attrs
import cattrs

from ._exceptions import ToolArgumentsError
from ._tool_schema import annotated_text, converter, describe, parse_docstring, schema_for
from ._tools import (
    AgentTool,
    AgentToolResult,
    RequiresApproval,
    ToolExecutionMode,
    ToolReconcile,
    ToolReplay,
    ToolUpdateCallback,
)
from .nursery import AbortController, AbortSignal

__all__ = ["ToolFunction", "tool"]

ToolFunction = Callable[..., object]
"""A function (``async def`` or plain ``def``) whose annotated parameters are the tool's
arguments; it returns a ``str``, an :class:`AgentToolResult` or a JSON value."""

INJECTED: Final = frozenset({"tool_call_id", "signal", "on_update"})
"""Parameters filled in by the runtime, by name; they are not part of the schema."""


@overload
def tool(fn: ToolFunction, /) -> AgentTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    timeout: float | None = None,
    prepare_arguments: Callable[[Any], Any] | None = None,
    requires_approval: RequiresApproval = False,
    thread: bool = True,
    replay: ToolReplay = "safe",
    reconcile: ToolReconcile | None = None,
) -> Callable[[ToolFunction], AgentTool]: ...


def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    timeout: float | None = None,
    prepare_arguments: Callable[[Any], Any] | None = None,
    requires_approval: RequiresApproval = False,
    thread: bool = True,
    replay: ToolReplay = "safe",
    reconcile: ToolReconcile | None = None,
) -> AgentTool | Callable[[ToolFunction], AgentTool]:
    """Build an :class:`AgentTool` from a typed function; usable bare or with options.

    An ``async def`` is awaited on the event loop. A plain ``def`` is called in a worker thread,
    so that a blocking function (a file, a database driver, ``time.sleep``) does not stop the
    other tasks; an abort or a timeout answers the call at once while the thread, which cannot
    be stopped, finishes in the background. A function that takes ``signal`` gets the call's
    own :class:`AbortSignal`, aborted as soon as the call is abandoned: poll
    ``signal.aborted`` to return early.

    The function may return a ``str``, an :class:`AgentToolResult`, or any JSON value (a dict,
    a list, a number, a bool, ``None``, an attrs or dataclass instance): the model then reads
    the value's JSON and ``details`` keeps the value.

    Args:
        fn: the function, when used bare (``@tool``).
        name: the tool's name; defaults to the function's ``__name__``.
        description: defaults to the docstring's text before its first section.
        label: a human-readable name; defaults to the tool's name.
        execution_mode: ``"sequential"`` or ``"parallel"``, as for :class:`AgentTool`.
        timeout: seconds, as for :class:`AgentTool`.
        prepare_arguments: runs on the raw arguments before validation.
        requires_approval: ``True``, or a sync function of the validated arguments returning
            a bool or a reason: the call waits for a decision before it runs, as for
            :class:`AgentTool`.
        thread: for a plain ``def``: ``False`` calls it on the event loop instead of in a
            worker thread (for a quick function; while it runs, nothing else does).
            An ``async def`` always runs on the loop.
        replay: ``"never"`` for a call a durable run must not simply run again after a crash
            (a payment), as for :class:`AgentTool`.
        reconcile: for ``replay="never"``: finds out whether an interrupted call took effect.

    Raises:
        TypeError: at decoration time, for a generator function, one that takes ``*args`` /
            ``**kwargs`` or positional-only parameters, or one whose annotations cannot be
            expressed as JSON Schema.
    """

    def decorate(function: ToolFunction) -> AgentTool:
        options: dict[str, Any] = {
            "execution_mode": execution_mode,
            "timeout": timeout,
            "prepare_arguments": prepare_arguments,
            "requires_approval": requires_approval,
            "replay": replay,
            "reconcile": reconcile,
        }
        if label is not None:
            options["label"] = label
        return _build_tool(function, name, description, options, thread)

    return decorate if fn is None else decorate(fn)


# --- from a function to an AgentTool --------------------------------------------------------------


@attrs.frozen
class _Argument:
    """One schema-visible parameter and how to turn its JSON value into the annotated type."""

    name: str
    annotation: Any
    structure: Callable[[Any, Any], Any]


def _build_tool(
    fn: ToolFunction,
    name: str | None,
    description: str | None,
    options: dict[str, Any],
    thread: bool,
) -> AgentTool:
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        raise TypeError(
            f"@tool needs a function that returns its result, not a generator: {_name_of(fn)}"
        )
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name:
        raise TypeError(f"@tool cannot name {fn!r}; pass name=...")
    summary, docs = parse_docstring(inspect.getdoc(fn))
    hints = _type_hints(fn)
    parameters, arguments, injected = _signature_schema(fn, hints, docs)
    return AgentTool(
        name=tool_name,
        description=summary if description is None else description,
        parameters=parameters,
        execute=_make_execute(fn, tool_name, arguments, injected, thread),
        **options,
    )


def _name_of(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))


def _type_hints(fn: ToolFunction) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError, or any failure to evaluate a string annotation
        raise TypeError(
            f"@tool cannot resolve the annotations of {_name_of(fn)}: {exc} "
            "(types used in a tool's signature must be importable from its module)"
        ) from exc


def _signature_schema(
    fn: ToolFunction, hints: dict[str, Any], docs: dict[str, str]
) -> tuple[dict[str, Any], list[_Argument], list[str]]:
    """The parameters' JSON Schema, the schema-visible arguments, and the injected names."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments: list[_Argument] = []
    injected: list[str] = []
    for parameter in inspect.signature(fn).parameters.values():
        _check_kind(fn, parameter)
        if parameter.name in INJECTED:
            injected.append(parameter.name)
            continue
        if parameter.name not in hints:
            raise TypeError(f"@tool: parameter {parameter.name!r} of {_name_of(fn)} needs a type")
        annotation = hints[parameter.name]
        where = f"parameter {parameter.name!r} of {_name_of(fn)}"
        schema = schema_for(annotation, where)
        text = None
        if typing.get_origin(annotation) is Annotated:
            text = annotated_text(typing.get_args(annotation))
        describe(schema, text or docs.get(parameter.name), parameter.default)
        properties[parameter.name] = schema
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
        arguments.append(_Argument(parameter.name, annotation, _structure_hook(annotation, where)))
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return parameters, arguments, injected


def _check_kind(fn: ToolFunction, parameter: inspect.Parameter) -> None:
    if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
        raise TypeError(f"@tool does not support *args or **kwargs ({parameter} of {_name_of(fn)})")
    if parameter.kind is parameter.POSITIONAL_ONLY:
        # Arguments are passed by keyword, so a positional-only parameter could never be filled.
        raise TypeError(
            f"@tool does not support positional-only parameters ({parameter} of {_name_of(fn)})"
        )


def _structure_hook(annotation: Any, where: str) -> Callable[[Any, Any], Any]:
    try:
        return converter.get_structure_hook(annotation)
    except Exception as exc:  # cattrs raises several kinds for types it cannot build
        raise TypeError(f"@tool cannot structure {annotation!r} for {where}: {exc}") from exc


def _make_execute(
    fn: ToolFunction, tool_name: str, arguments: list[_Argument], injected: list[str], thread: bool
) -> Callable[..., Awaitable[object]]:
    call = _caller(fn, thread)

    async def execute(
        tool_call_id: str,
        params: Any,
        signal: AbortSignal,
        on_update: ToolUpdateCallback,
        /,
    ) -> object:
        kwargs = _structure_arguments(tool_name, arguments, params)
        runtime = {"tool_call_id": tool_call_id, "signal": signal, "on_update": on_update}
        for key in injected:
            kwargs[key] = runtime[key]
        return await call(kwargs)

    execute.__wrapped__ = fn  # type: ignore[attr-defined]
    execute.__qualname__ = f"{getattr(fn, '__qualname__', tool_name)}.execute"
    return execute


def _caller(fn: ToolFunction, thread: bool) -> Callable[[dict[str, Any]], Awaitable[object]]:
    """``call(kwargs)``: the awaitable of one call of ``fn``; an ``async def``'s own coroutine,
    so that it costs no frame of its own."""
    if inspect.iscoroutinefunction(fn):
        return lambda kwargs: fn(**kwargs)
    return functools.partial(_in_thread if thread else _on_loop, fn)


async def _on_loop(fn: ToolFunction, kwargs: dict[str, Any]) -> object:
    return fn(**kwargs)


async def _in_thread(fn: ToolFunction, kwargs: dict[str, Any]) -> object:
    """Call ``fn`` in a worker thread; on cancellation answer at once and abandon the thread.

    The thread gets the call's own signal (aborted when the call ends, however it ends) and an
    ``on_update`` that hands each update to the event loop while the call is running.
    """
    signal: AbortSignal | None = kwargs.get("signal")
    controller = AbortController() if signal is not None else None
    if controller is not None:
        kwargs["signal"] = controller.signal
    updates = _ThreadUpdates(kwargs["on_update"]) if "on_update" in kwargs else None
    if updates is not None:
        kwargs["on_update"] = updates
    try:
        return await anyio.to_thread.run_sync(
            functools.partial(fn, **kwargs), abandon_on_cancel=True
        )
    finally:
        if updates is not None:
            updates.open = False
        if controller is not None:
            assert signal is not None
            controller.abort(signal.reason if signal.aborted else _ABANDONED)


_ABANDONED: Final = "tool call ended"
"""The abort reason a thread sees when its call ended without the run's abort (a timeout, the
run failing, or the function having returned)."""


class _ThreadUpdates:
    """A worker thread's ``on_update``: runs the call's own ``on_update`` on the event loop.

    ``open`` is read and cleared on the loop, so an update the abandoned thread sends after its
    call ended is dropped instead of following the call's end event.
    """

    __slots__ = ("_on_update", "open")

    def __init__(self, on_update: ToolUpdateCallback) -> None:
        self._on_update = on_update
        self.open = True

    def __call__(self, partial: AgentToolResult) -> None:
        anyio.from_thread.run_sync(self._deliver, partial)

    def _deliver(self, partial: AgentToolResult) -> None:
        if self.open:
            self._on_update(partial)


def _structure_arguments(tool_name: str, arguments: list[_Argument], params: Any) -> dict[str, Any]:
    if not isinstance(params, Mapping):
        raise ToolArgumentsError(f'Arguments for tool "{tool_name}" must be an object')
    kwargs: dict[str, Any] = {}
    for argument in arguments:
        if argument.name not in params:
            continue  # optional and left out: the function's own default applies
        try:
            kwargs[argument.name] = argument.structure(params[argument.name], argument.annotation)
        except Exception as exc:
            raise ToolArgumentsError(_structure_error(tool_name, argument.name, exc)) from exc
    return kwargs


def _structure_error(tool_name: str, name: str, exc: Exception) -> str:
    # cattrs groups nested failures; flatten them so the model reads one plain sentence.
    if isinstance(exc, cattrs.BaseValidationError):
        detail = "; ".join(cattrs.transform_error(exc, path=name))
    else:
        detail = f"{name}: {exc}"
    return f'Invalid arguments for tool "{tool_name}": {detail}'
