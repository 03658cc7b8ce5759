"""The ``@tool`` decorator: an :class:`AgentTool` from a typed ``async def``.

The parameters' annotations become the JSON Schema the model sees, the docstring its description,
and at call time the validated arguments are structured back into the annotated types (cattrs).

Decisions, documented here once:

* Extra properties are allowed, as upstream allows them (no ``additionalProperties: false``);
  a key that names no parameter is ignored when the function is called.
* The description is the docstring's text before its first Google-style section (``Args:``,
  ``Returns:`` …); each ``Args:`` entry becomes its property's ``"description"``.
* A JSON-representable default is written into the schema as ``"default"``, so the model can see it;
  the function's own default is what applies when the argument is left out.
* ``X | None`` and other unions of plain types become a ``type`` list (``["integer", "null"]``);
  unions involving objects or arrays become ``anyOf``.
* Nested attrs classes are inlined (no ``$ref``); a class that contains itself is refused.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, Union, overload

import attrs
import cattrs
from cattrs.strategies import configure_union_passthrough

from ._exceptions import ToolArgumentsError
from ._tools import AgentTool, AgentToolResult, ToolExecutionMode, ToolUpdateCallback
from .nursery import AbortSignal

__all__ = ["ToolFunction", "tool"]

ToolFunction = Callable[..., Awaitable[AgentToolResult | str]]
"""An ``async def`` whose annotated parameters are the tool's arguments."""

INJECTED: Final = frozenset({"tool_call_id", "signal", "on_update"})
"""Parameters filled in by the runtime, by name; they are not part of the schema."""

_converter = cattrs.Converter()
# Arguments were validated against the schema already, so a union of plain values can pass
# through as it is instead of needing a disambiguation hook.
configure_union_passthrough(str | int | float | bool | None, _converter)
_converter.register_structure_hook(type(None), lambda value, _type: value)


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
    summary, docs = _parse_docstring(inspect.getdoc(fn))
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
        return typing.get_type_hints(fn)
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
        schema = _schema_for(annotation, where, ())
        _describe(schema, docs.get(parameter.name), parameter.default)
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


def _describe(schema: dict[str, Any], description: str | None, default: Any) -> None:
    if description:
        schema["description"] = description
    if default is not inspect.Parameter.empty and default is not attrs.NOTHING:
        json_default = _as_json(default)
        if json_default is not _NOT_JSON:
            schema["default"] = json_default


_NOT_JSON: Final = object()


def _as_json(value: Any) -> Any:
    """A JSON copy of ``value`` (so the schema never aliases a mutable default), or _NOT_JSON."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return _NOT_JSON


def _structure_hook(annotation: Any, where: str) -> Callable[[Any, Any], Any]:
    try:
        return _converter.get_structure_hook(annotation)
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


# --- annotations to JSON Schema -------------------------------------------------------------------

_SCALARS: Final[dict[Any, str]] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_LITERAL_TYPES: Final[dict[type, str]] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    type(None): "null",
}


def _schema_for(annotation: Any, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    """The JSON Schema of one annotation; ``seen`` holds the attrs classes being expanded."""
    if annotation is Any:
        return {}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return _literal_schema(typing.get_args(annotation), where)
    if origin is Union or origin is types.UnionType:
        return _union_schema(typing.get_args(annotation), where, seen)
    if annotation is list or origin is list:
        return _list_schema(typing.get_args(annotation), where, seen)
    if annotation is dict or origin is dict:
        return _dict_schema(typing.get_args(annotation), where, seen)
    if isinstance(annotation, type) and attrs.has(annotation):
        return _attrs_schema(annotation, where, seen)
    raise TypeError(f"@tool: unsupported annotation {annotation!r} for {where}")


def _literal_schema(values: tuple[Any, ...], where: str) -> dict[str, Any]:
    names: list[str] = []
    for value in values:
        name = _LITERAL_TYPES.get(type(value))
        if name is None:
            raise TypeError(f"@tool: unsupported Literal value {value!r} for {where}")
        if name not in names:
            names.append(name)
    # The type lets the model's "1" be coerced to the literal 1 before the enum check.
    return {"type": names[0] if len(names) == 1 else names, "enum": list(values)}


def _union_schema(members: tuple[Any, ...], where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    schemas = [_schema_for(member, where, seen) for member in members]
    plain = [s.get("type") for s in schemas if set(s) == {"type"} and isinstance(s["type"], str)]
    if len(plain) == len(schemas):
        return {"type": list(dict.fromkeys(plain))}
    return {"anyOf": schemas}


def _list_schema(args: tuple[Any, ...], where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    if args:
        schema["items"] = _schema_for(args[0], where, seen)
    return schema


def _dict_schema(args: tuple[Any, ...], where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if args:
        if args[0] is not str:
            raise TypeError(f"@tool: dict keys must be str (JSON objects) for {where}")
        schema["additionalProperties"] = _schema_for(args[1], where, seen)
    return schema


_FACTORY: Final[type] = type(attrs.Factory(list))  # attrs' stubs present Factory as a function


def _attrs_schema(cls: type, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    if cls in seen:
        raise TypeError(f"@tool: {cls.__qualname__} contains itself ({where}); not supported")
    try:
        attrs.resolve_types(cls)
    except Exception as exc:
        raise TypeError(f"@tool cannot resolve the annotations of {cls!r}: {exc}") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        if field.type is None:
            raise TypeError(f"@tool: field {field.name!r} of {cls.__qualname__} needs a type")
        schema = _schema_for(field.type, f"{cls.__qualname__}.{field.name} ({where})", (*seen, cls))
        default = attrs.NOTHING if isinstance(field.default, _FACTORY) else field.default
        _describe(schema, field.metadata.get("description"), default)
        properties[field.name] = schema
        if field.default is attrs.NOTHING:
            required.append(field.name)
    return _object_schema(cls, properties, required)


def _object_schema(cls: type, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    summary, _ = _parse_docstring(cls.__dict__.get("__doc__"))
    if summary:
        schema["description"] = summary
    return schema


# --- Google-style docstrings ----------------------------------------------------------------------

_SECTION: Final = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Returns?|Yields?|Raises|Examples?|Notes?"
    r"|Attributes|See Also|Warnings?|Todo):\s*"
)
_ARG_SECTIONS: Final = frozenset({"Args", "Arguments", "Parameters", "Params", "Keyword Args"})
_ARG_ENTRY: Final = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:\s*(?P<text>.*)")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and the per-parameter text of its Args section."""
    if not doc:
        return "", {}
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent = -1
    for line in inspect.cleandoc(doc).splitlines():
        header = _SECTION.fullmatch(line)
        if header:
            section, current, entry_indent = header[1], None, -1
        elif section is None:
            description.append(line)
        elif section in _ARG_SECTIONS and line.strip():
            indent = len(line) - len(line.lstrip())
            entry = _ARG_ENTRY.fullmatch(line.strip())
            if entry and (entry_indent < 0 or indent <= entry_indent):
                name, entry_indent = entry["name"], indent
                params[name] = entry["text"].strip()
                current = name
            elif current is not None:  # a continuation line of the current entry
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params
