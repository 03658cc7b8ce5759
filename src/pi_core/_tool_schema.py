"""What ``@tool`` accepts as a parameter type: its JSON Schema, and how cattrs structures it.

Decisions, documented here once:

* ``X | None`` and other unions of plain types become a ``type`` list (``["integer", "null"]``);
  unions involving objects or arrays become ``anyOf``. A validated value is structured into the
  first member whose schema it passes, as validation chose it.
* Nested attrs classes, dataclasses and TypedDicts are inlined (no ``$ref``); a class that
  contains itself is refused.
* ``Annotated[T, "text"]`` describes the value: the first string among its metadata becomes the
  schema's ``"description"``.
* A JSON-representable default is written into the schema as ``"default"``, so the model sees it.
* Values with no JSON type of their own travel as strings with a ``format`` the validator checks
  (``datetime`` as ``date-time``, which needs an offset; ``date``, ``time``, ``uuid``); a
  ``timedelta`` is a number of seconds.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import inspect
import json
import pathlib
import re
import types
import typing
import uuid
from collections.abc import Callable, Mapping, MutableSequence, Sequence
from collections.abc import Set as AbstractSet
from typing import Annotated, Any, Final, Literal, Union

import attrs
import cattrs
import typing_extensions
from cattrs.strategies import configure_union_passthrough
from typing_extensions import is_typeddict

from ._schema_check import passes_schema

__all__ = ["annotated_text", "converter", "describe", "parse_docstring", "schema_for"]

Seen = tuple[type, ...]
"""The classes being expanded, outermost first: a class met again contains itself."""


# --- structuring JSON values into the annotated types ----------------------------------------


def _parse_datetime(value: str, _type: Any) -> datetime.datetime:
    # Python 3.10's fromisoformat does not read the "Z" that RFC 3339 (and the format) allow.
    return datetime.datetime.fromisoformat(re.sub(r"[zZ]$", "+00:00", value))


def _parse_time(value: str, _type: Any) -> datetime.time:
    return datetime.time.fromisoformat(re.sub(r"[zZ]$", "+00:00", value))


converter = cattrs.Converter(unstruct_collection_overrides={AbstractSet: list})
"""Structures validated arguments into the annotated types, and unstructures returned values."""
# Arguments were validated against the schema already, so a union of plain values can pass
# through as it is instead of needing a disambiguation hook.
configure_union_passthrough(str | int | float | bool | None, converter)
converter.register_structure_hook(type(None), lambda value, _type: value)
converter.register_structure_hook(datetime.datetime, _parse_datetime)
converter.register_structure_hook(datetime.time, _parse_time)
converter.register_structure_hook(
    datetime.date, lambda value, _type: datetime.date.fromisoformat(value)
)
converter.register_structure_hook(
    datetime.timedelta, lambda value, _type: datetime.timedelta(seconds=value)
)
converter.register_structure_hook(uuid.UUID, lambda value, _type: uuid.UUID(value))
converter.register_structure_hook(decimal.Decimal, lambda value, _type: decimal.Decimal(str(value)))

# The way back, for the values a tool returns (see ``_tool_result.py``): the same shapes the
# arguments arrive in, so a tool that takes a class and returns one shows the model one form.
converter.register_unstructure_hook(datetime.datetime, datetime.datetime.isoformat)
converter.register_unstructure_hook(datetime.date, datetime.date.isoformat)
converter.register_unstructure_hook(datetime.time, datetime.time.isoformat)
converter.register_unstructure_hook(datetime.timedelta, datetime.timedelta.total_seconds)
converter.register_unstructure_hook(uuid.UUID, str)
converter.register_unstructure_hook(decimal.Decimal, str)  # exact digits: a float would round
converter.register_unstructure_hook_func(
    lambda cls: isinstance(cls, type) and issubclass(cls, pathlib.PurePath), str
)


def _typeddict_hook(cls: type) -> Callable[[Any, Any], dict[str, Any]]:
    """Structure a TypedDict key by key. (cattrs' own hook trusts ``__required_keys__``, which
    counts ``NotRequired`` keys as required under ``from __future__ import annotations``; the
    schema has checked the required keys already.)"""
    types = {name: _strip_required(hint) for name, hint in _resolved_hints(cls).items()}

    def structure(value: Mapping[str, Any], _type: Any) -> dict[str, Any]:
        return {
            key: converter.structure(item, types[key])
            for key, item in value.items()
            if key in types
        }

    return structure


converter.register_structure_hook_factory(is_typeddict, _typeddict_hook)


# --- annotations to JSON Schema ------------------------------------------------------------------

_SCALARS: Final[dict[Any, dict[str, Any]]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    decimal.Decimal: {"type": "number"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    datetime.timedelta: {"type": "number"},
    uuid.UUID: {"type": "string", "format": "uuid"},
}
_JSON_TYPES: Final[dict[type, str]] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}
_ARRAYS: Final = (list, tuple, set, frozenset, Sequence, MutableSequence, AbstractSet)


def schema_for(annotation: Any, where: str, seen: Seen = ()) -> dict[str, Any]:
    """The JSON Schema of one annotation (a fresh dict the caller may extend).

    Raises:
        TypeError: the annotation has no JSON Schema here; ``where`` says whose it is.
    """
    if annotation is Any:
        return {}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    if isinstance(annotation, type) and issubclass(annotation, pathlib.PurePath):
        return {"type": "string"}
    supertype = getattr(annotation, "__supertype__", None)  # a NewType
    if supertype is not None:
        return schema_for(supertype, where, seen)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _annotated_schema(args, where, seen)
    if origin is Literal:
        return _literal_schema(args, where)
    if origin is Union or origin is types.UnionType:
        return _union_schema(args, where, seen)
    if annotation in _ARRAYS or origin in _ARRAYS:
        return _array_schema(origin or annotation, args, where, seen)
    if annotation in (dict, Mapping) or origin in (dict, Mapping):
        return _dict_schema(args, where, seen)
    if isinstance(annotation, type):
        return _class_schema(annotation, where, seen)
    raise TypeError(f"@tool: unsupported annotation {annotation!r} for {where}")


def _class_schema(cls: type, where: str, seen: Seen) -> dict[str, Any]:
    if issubclass(cls, enum.Enum):
        return _enum_schema(cls, where)
    if not (attrs.has(cls) or dataclasses.is_dataclass(cls) or is_typeddict(cls)):
        raise TypeError(f"@tool: unsupported annotation {cls!r} for {where}")
    if cls in seen:
        raise TypeError(f"@tool: {cls.__qualname__} contains itself ({where}); not supported")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in _fields(cls):
        inner = schema_for(field.type, f"{cls.__qualname__}.{field.name} ({where})", (*seen, cls))
        describe(inner, field.description, field.default)
        properties[field.name] = inner
        if field.required:
            required.append(field.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    summary, _ = parse_docstring(cls.__dict__.get("__doc__"))
    if summary and not _is_generated_doc(cls, summary):
        schema["description"] = summary
    return schema


def _is_generated_doc(cls: type, summary: str) -> bool:
    """dataclasses and TypedDict write ``Name(field: type, ...)`` when a class has no docstring."""
    return summary.startswith(f"{cls.__name__}(")


def _resolved_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise TypeError(f"@tool cannot resolve the annotations of {cls!r}: {exc}") from exc


@attrs.frozen
class _Field:
    name: str
    type: Any
    required: bool
    default: Any
    description: str | None


def _fields(cls: type) -> list[_Field]:
    """The fields a JSON object of ``cls`` has: attrs, dataclass or TypedDict alike."""
    hints = _resolved_hints(cls)
    if is_typeddict(cls):
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset(hints))
        return [
            _Field(
                name,
                _strip_required(hint),
                _key_required(name, hint, required_keys),
                inspect.Parameter.empty,
                None,
            )
            for name, hint in hints.items()
        ]
    if attrs.has(cls):
        return [
            _Field(
                f.name,
                hints[f.name],
                f.default is attrs.NOTHING,
                _plain_default(f.default),
                f.metadata.get("description"),
            )
            for f in attrs.fields(cls)
            if f.init
        ]
    return [
        _Field(f.name, hints[f.name], _required(f), f.default, f.metadata.get("description"))
        for f in dataclasses.fields(cls)
        if f.init
    ]


_FACTORY: Final[type] = type(attrs.Factory(list))  # attrs' stubs present Factory as a function


def _plain_default(default: Any) -> Any:
    """An attrs default as a value, or ``empty`` for none or a factory (nothing to show)."""
    if default is attrs.NOTHING or isinstance(default, _FACTORY):
        return inspect.Parameter.empty
    return default


def _required(field: dataclasses.Field[Any]) -> bool:
    missing = dataclasses.MISSING
    return field.default is missing and field.default_factory is missing


def _markers(name: str) -> frozenset[Any]:
    return frozenset(getattr(m, name) for m in (typing, typing_extensions) if hasattr(m, name))


_REQUIRED: Final = _markers("Required")
_NOT_REQUIRED: Final = _markers("NotRequired")


def _strip_required(hint: Any) -> Any:
    """``Required[T]`` / ``NotRequired[T]`` of a TypedDict key → ``T``."""
    if typing_extensions.get_origin(hint) in _REQUIRED | _NOT_REQUIRED:
        return typing_extensions.get_args(hint)[0]
    return hint


def _key_required(name: str, hint: Any, required_keys: frozenset[str]) -> bool:
    """Whether a TypedDict key is required, read from its resolved hint first: with string
    annotations, Python counts ``NotRequired[T]`` keys among the required ones."""
    marker = typing_extensions.get_origin(hint)
    if marker in _REQUIRED:
        return True
    if marker in _NOT_REQUIRED:
        return False
    return name in required_keys


def _annotated_schema(args: tuple[Any, ...], where: str, seen: Seen) -> dict[str, Any]:
    schema = schema_for(args[0], where, seen)
    text = annotated_text(args)
    if text:
        schema["description"] = text
    return schema


def annotated_text(args: tuple[Any, ...]) -> str | None:
    """The first string in the metadata of ``Annotated[T, ...]`` (given its args), if any."""
    return next((meta for meta in args[1:] if isinstance(meta, str)), None)


def _enum_schema(cls: type[enum.Enum], where: str) -> dict[str, Any]:
    values = [member.value for member in cls]
    schema = _literal_schema(tuple(values), f"{cls.__qualname__} ({where})")
    summary, _ = parse_docstring(cls.__dict__.get("__doc__"))
    if summary and summary != "An enumeration.":
        schema["description"] = summary
    return schema


def _literal_schema(values: tuple[Any, ...], where: str) -> dict[str, Any]:
    names: list[str] = []
    for value in values:
        name = _JSON_TYPES.get(type(value))
        if name is None:
            raise TypeError(f"@tool: unsupported Literal value {value!r} for {where}")
        if name not in names:
            names.append(name)
    # The type lets the model's "1" be coerced to the literal 1 before the enum check.
    return {"type": names[0] if len(names) == 1 else names, "enum": list(values)}


def _union_schema(members: tuple[Any, ...], where: str, seen: Seen) -> dict[str, Any]:
    schemas = [schema_for(member, where, seen) for member in members]
    plain = [s.get("type") for s in schemas if set(s) == {"type"} and isinstance(s["type"], str)]
    if len(plain) == len(schemas):
        return {"type": list(dict.fromkeys(plain))}
    return {"anyOf": schemas}


def _array_schema(kind: Any, args: tuple[Any, ...], where: str, seen: Seen) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    if kind is tuple and args and args[-1] is not Ellipsis:
        if args == ((),):  # tuple[()]: the empty tuple
            args = ()
        # A fixed-length tuple: one schema per position, as TypeBox writes Type.Tuple.
        schema["items"] = [schema_for(arg, where, seen) for arg in args]
        schema["additionalItems"] = False
        schema["minItems"] = schema["maxItems"] = len(args)
        return schema
    if args:
        schema["items"] = schema_for(args[0], where, seen)
    if kind in (set, frozenset, AbstractSet):
        schema["uniqueItems"] = True
    return schema


def _dict_schema(args: tuple[Any, ...], where: str, seen: Seen) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if args:
        if args[0] is not str:
            raise TypeError(f"@tool: dict keys must be str (JSON objects) for {where}")
        schema["additionalProperties"] = schema_for(args[1], where, seen)
    return schema


def describe(schema: dict[str, Any], description: str | None, default: Any) -> None:
    """Add a description (it replaces the type's own) and a JSON default."""
    if description:
        schema["description"] = description
    if default is not inspect.Parameter.empty:
        json_default = _as_json(default)
        if json_default is not _NOT_JSON:
            schema["default"] = json_default


_NOT_JSON: Final = object()


def _as_json(value: Any) -> Any:
    """A JSON copy of ``value`` (so the schema never aliases a mutable default), or _NOT_JSON."""
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return _NOT_JSON


# --- unions: structured into the member the arguments were validated as ----------------------

_PLAIN: Final = frozenset({str, int, float, bool, type(None)})


def _is_structured_union(annotation: Any) -> bool:
    """A union with a member that is more than a plain JSON value (a class, a list, a Literal)."""
    origin = typing.get_origin(annotation)
    if origin is not Union and origin is not types.UnionType:
        return False
    return not all(member in _PLAIN for member in typing.get_args(annotation))


def _union_hook(union: Any) -> Callable[[Any, Any], Any]:
    """Structure a value into the first member whose schema it passes: the member validation
    accepted it as (its ``anyOf`` keeps a value the first accepting branch takes), so the two
    steps never read one value two ways, and members cattrs could not tell apart are fine."""
    members = [(member, schema_for(member, repr(union))) for member in typing.get_args(union)]

    def structure(value: Any, _type: Any) -> Any:
        for member, schema in members:
            if passes_schema(schema, schema, value) is True:
                return converter.structure(value, member)
        raise ValueError(f"{value!r} is none of {union!r}")

    return structure


converter.register_structure_hook_factory(_is_structured_union, _union_hook)


# --- Google-style docstrings ----------------------------------------------------------------------

_SECTION: Final = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Returns?|Yields?|Raises|Examples?|Notes?"
    r"|Attributes|See Also|Warnings?|Todo):\s*"
)
_ARG_SECTIONS: Final = frozenset({"Args", "Arguments", "Parameters", "Params", "Keyword Args"})
_ARG_ENTRY: Final = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:\s*(?P<text>.*)")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
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
