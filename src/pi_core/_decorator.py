"""The ``@tool`` decorator: an :class:`AgentTool` from a typed ``async def``.

The parameters' annotations become the JSON Schema the model sees, the docstring its description,
and at call time the validated arguments are structured back into the annotated types (cattrs).

Decisions, documented here once (the types and their schemas: :mod:`pi_core._tool_schema`):

* Extra properties are allowed, as upstream allows them (no ``additionalProperties: false``);
  a key that names no parameter is ignored when the function is called.
* The description is the docstring's text before its first Google-style section (``Args:``,
  ``Returns:`` …); each ``Args:`` entry becomes its property's ``"description"``, unless the
  parameter's ``Annotated[T, "text"]`` gave one.
* The function's own default is what applies when the argument is left out.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Final, overload

import attrs
import cattrs

from ._exceptions import ToolArgumentsError
from ._tool_schema import annotated_text, converter, describe, parse_docstring, schema_for
from ._tools import AgentTool, AgentToolResult, ToolExecutionMode, ToolUpdateCallback
from .nursery import AbortSignal

__all__ = ["ToolFunction", "tool"]

ToolFunction = Callable[..., Awaitable[AgentToolResult | str]]
"""An ``async def`` whose annotated parameters are the tool's arguments."""

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
) -> AgentTool | Callable[[ToolFunction], AgentTool]:
    """Build an :class:`AgentTool` from a typed ``async def``; usable bare or with options.

    Args:
        fn: the function, when used bare (``@tool``).
        name: the tool's name; defaults to the function's ``__name__``.
        description: defaults to the docstring's text before its first section.
        label: a human-readable name; defaults to the tool's name.
        execution_mode: ``"sequential"`` or ``"parallel"``, as for :class:`AgentTool`.
        timeout: seconds, as for :class:`AgentTool`.
        prepare_arguments: runs on the raw arguments before validation.

    Raises:
        TypeError: at decoration time, for a function that is not ``async def``, that takes
            ``*args`` / ``**kwargs`` or positional-only parameters, or whose annotations cannot
            be expressed as JSON Schema.
    """

    def decorate(function: ToolFunction) -> AgentTool:
        options: dict[str, Any] = {
            "execution_mode": execution_mode,
            "timeout": timeout,
            "prepare_arguments": prepare_arguments,
        }
        if label is not None:
            options["label"] = label
        return _build_tool(function, name, description, options)

    return decorate if fn is None else decorate(fn)


# --- from a function to an AgentTool --------------------------------------------------------------


@attrs.frozen
class _Argument:
    """One schema-visible parameter and how to turn its JSON value into the annotated type."""

    name: str
    annotation: Any
    structure: Callable[[Any, Any], Any]


def _build_tool(
    fn: ToolFunction, name: str | None, description: str | None, options: dict[str, Any]
) -> AgentTool:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool needs an async def function, got {_name_of(fn)}")
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
        execute=_make_execute(fn, tool_name, arguments, injected),
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
    fn: ToolFunction, tool_name: str, arguments: list[_Argument], injected: list[str]
) -> Callable[..., Awaitable[AgentToolResult | str]]:
    async def execute(
        tool_call_id: str,
        params: Any,
        signal: AbortSignal,
        on_update: ToolUpdateCallback,
        /,
    ) -> AgentToolResult | str:
        kwargs = _structure_arguments(tool_name, arguments, params)
        runtime = {"tool_call_id": tool_call_id, "signal": signal, "on_update": on_update}
        for key in injected:
            kwargs[key] = runtime[key]
        return await fn(**kwargs)

    execute.__wrapped__ = fn  # type: ignore[attr-defined]
    execute.__qualname__ = f"{getattr(fn, '__qualname__', tool_name)}.execute"
    return execute


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
