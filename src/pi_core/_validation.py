"""Tool-argument validation: upstream's JSON-Schema coercion, then a cached fastjsonschema check.

:func:`validate_tool_arguments` runs on every tool call, so everything that depends only on the
schema (the coercion plan and the compiled validator) is built once and cached; a cached call
walks the arguments once to copy and coerce them and runs one compiled validator.

Coercion follows the original's ``coerceWithJsonSchema`` (the "Tools" section of the concepts
page describes it). A few choices that the TypeScript original did not have to make, because
JavaScript has a single number type:

* A string coerced to ``number`` becomes an ``int`` when it is an integer literal (``"42"``),
  else a ``float`` (``"2.5"``, ``"42.0"``, ``"1e3"``). Only decimal notation is read; surrounding
  whitespace is ignored, as JavaScript's ``Number()`` ignores it.
* Under ``integer``, a float with an integral value (``4.0``) becomes ``4``: in JavaScript it
  already *is* ``4``.
* Numbers coerced to ``string`` print as JavaScript prints them (``2.0`` → ``"2"``).
* ``$ref`` is not followed while coercing (upstream does not either); validation resolves it.

The compiled checks and the translation of a failed check into upstream's error text live in
``pi_core._schema_check``.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, cast

from fastjsonschema import JsonSchemaException, JsonSchemaValueException

from ._exceptions import ToolArgumentsError
from ._messages import ToolCall
from ._schema_check import (
    check_for,
    error_text,
    issues_of,
    js_number,
    passes,
    remember,
    with_definitions,
)

__all__ = ["validate_tool_arguments"]

Coercer = Callable[[Any], Any]
"""Returns a coerced copy of a value; never mutates it and never returns a shared container."""


class ToolLike(Protocol):
    """What :func:`validate_tool_arguments` needs of a tool."""

    @property
    def name(self) -> str: ...  # pragma: no cover - protocol

    @property
    def parameters(self) -> Any: ...  # pragma: no cover - protocol


def validate_tool_arguments(tool: ToolLike, tool_call: ToolCall) -> dict[str, Any]:
    """Coerce and validate a tool call's arguments against ``tool.parameters``.

    Args:
        tool: anything with ``.name`` and ``.parameters`` (a JSON Schema dict).
        tool_call: the call whose ``arguments`` are checked; they are never mutated.

    Returns:
        A coerced deep copy of the arguments, never the input object. (A non-object value that
        the schema explicitly accepts is returned as it is coerced.)

    Raises:
        ToolArgumentsError: with upstream's text, naming ``tool_call.name``; also when the schema
            itself cannot be compiled.
    """
    plan = _plan_for(tool)
    args = tool_call.arguments
    coerced = plan.coerce(args)
    try:
        plan.check(coerced)
    except JsonSchemaValueException as exc:
        issues = issues_of(exc, plan.schema, "")
        raise ToolArgumentsError(error_text(tool_call.name, issues, args)) from None
    # A dict whenever the schema asks for an object, which a tool's schema always does.
    return cast("dict[str, Any]", coerced)


# --- copying -------------------------------------------------------------------------------------

_ATOMS: Final = frozenset({str, int, float, bool, type(None)})


def _clone(value: Any) -> Any:
    """A deep copy, fast for JSON values (the only ones a model can send)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: _clone(item) for key, item in value.items()}
    if kind is list:
        return [_clone(item) for item in value]
    return copy.deepcopy(value)


# --- primitive coercions (a schema's "type") ------------------------------------------------------


class _Unchanged:
    """Marks "no rule applies" (``None`` is a legitimate coercion result)."""


_UNCHANGED: Final = _Unchanged()
_INT_LITERAL: Final = re.compile(r"[+-]?\d+", re.ASCII)
_NUMBER_LITERAL: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse_number(text: str) -> Any:
    stripped = text.strip()
    if _INT_LITERAL.fullmatch(stripped):
        try:
            return int(stripped)
        except ValueError:  # beyond int's digit limit: read it as a float below
            pass
    if _NUMBER_LITERAL.fullmatch(stripped):
        number = float(stripped)
        return number if math.isfinite(number) else _UNCHANGED
    return _UNCHANGED


def _to_number(value: Any) -> Any:
    kind = type(value)
    if kind is int or kind is float:  # the common case first: nothing to do
        return _UNCHANGED
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        return _parse_number(value)
    return _UNCHANGED


def _to_integer(value: Any) -> Any:
    if type(value) is int:
        return _UNCHANGED
    if isinstance(value, float):
        return int(value) if value.is_integer() else _UNCHANGED
    number = _to_number(value)
    if isinstance(number, float):
        return int(number) if number.is_integer() else _UNCHANGED
    return number


def _to_boolean(value: Any) -> Any:
    if type(value) is bool:
        return _UNCHANGED
    if value is None:
        return False
    if value == "true" or value == "false":
        return value == "true"
    if _is_number(value) and value in (0, 1):
        return value == 1
    return _UNCHANGED


def _to_string(value: Any) -> Any:
    if type(value) is str:
        return _UNCHANGED
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        return js_number(value)
    return _UNCHANGED


def _to_null(value: Any) -> Any:
    if value is None:
        return _UNCHANGED
    if value == "" or value is False or (_is_number(value) and value == 0):
        return None
    return _UNCHANGED


_PRIMITIVES: Final[dict[str, Coercer]] = {
    "number": _to_number,
    "integer": _to_integer,
    "boolean": _to_boolean,
    "string": _to_string,
    "null": _to_null,
}

_MATCHES: Final[dict[str, Callable[[Any], bool]]] = {
    "string": lambda v: isinstance(v, str),
    "number": _is_number,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _primitive_step(types: tuple[str, ...]) -> Coercer | None:
    """The "type" rule for a list of types: the first primitive coercion that changes the value
    wins, unless the value already has one of the types ("1" for ["number", "string"] stays)."""
    rules = [_PRIMITIVES[name] for name in types if name in _PRIMITIVES]
    if not rules:
        return None
    matchers = [_MATCHES[name] for name in types if name in _MATCHES]

    def coerce(value: Any) -> Any:
        if any(match(value) for match in matchers):
            return value
        for rule in rules:
            result = rule(value)
            if result is not _UNCHANGED:
                return result
        return value

    return coerce


# --- the coercion plan of a schema ---------------------------------------------------------------


def _build_coercer(schema: Any, root: Any) -> Coercer:
    """Compile ``schema`` into a function applying upstream's coercion rules, in their order."""
    if not isinstance(schema, Mapping):
        return _clone
    steps: list[Coercer] = []
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        steps.extend(_build_coercer(part, root) for part in all_of)
    for keyword in ("anyOf", "oneOf"):
        alternatives = schema.get(keyword)
        if isinstance(alternatives, list):
            steps.append(_first_valid(alternatives, root))
    if "type" in schema:
        steps.append(_typed(schema, root))
    return _chain(steps)


def _chain(steps: list[Coercer]) -> Coercer:
    if not steps:
        return _clone
    if len(steps) == 1:
        return steps[0]

    def coerce(value: Any) -> Any:
        for step in steps:
            value = step(value)
        return value

    return coerce


def _first_valid(alternatives: list[Any], root: Any) -> Coercer:
    """anyOf / oneOf: the first alternative whose coercion of the value validates against it."""
    options = [
        (_build_coercer(alternative, root), check_for(with_definitions(alternative, root)))
        for alternative in alternatives
    ]

    def coerce(value: Any) -> Any:
        for coerce_option, check in options:
            candidate = coerce_option(value)
            if passes(check, candidate):
                return candidate
        return _clone(value)

    return coerce


def _typed(schema: Mapping[str, Any], root: Any) -> Coercer:
    declared = schema["type"]
    if isinstance(declared, str):
        types: tuple[str, ...] = (declared,)
    else:  # a malformed "type" is the validator's to report, not ours
        types = (
            tuple(name for name in declared if isinstance(name, str))
            if isinstance(declared, list)
            else ()
        )
    if len(types) == 1 and types[0] in _PRIMITIVES:
        return _single_primitive(_PRIMITIVES[types[0]])
    primitive = _primitive_step(types)
    structural = _structural_step(schema, types, root)
    if primitive is None:
        return structural

    def coerce(value: Any) -> Any:
        return structural(primitive(value))

    return coerce


def _single_primitive(rule: Coercer) -> Coercer:
    # The common leaf ({"type": "string"} …), kept to one extra call: it runs once per argument.
    def coerce(value: Any) -> Any:
        result = rule(value)
        if result is _UNCHANGED:
            return value if type(value) in _ATOMS else _clone(value)
        return result

    return coerce


def _structural_step(schema: Mapping[str, Any], types: tuple[str, ...], root: Any) -> Coercer:
    """Objects coerce their properties (and extra keys by a schema-valued additionalProperties);
    arrays coerce their items, positionally when ``items`` is a list."""
    object_step = _object_step(schema, root) if "object" in types else None
    array_step = _array_step(schema, root) if "array" in types else None
    if array_step is None:
        return object_step or _clone
    if object_step is None:
        return array_step

    def coerce(value: Any) -> Any:
        return object_step(value) if isinstance(value, dict) else array_step(value)

    return coerce


def _object_step(schema: Mapping[str, Any], root: Any) -> Coercer:
    properties = schema.get("properties")
    by_key: dict[str, Coercer] = {}
    if isinstance(properties, Mapping):
        by_key = {key: _build_coercer(sub, root) for key, sub in properties.items()}
    extra = schema.get("additionalProperties")
    other = _build_coercer(extra, root) if isinstance(extra, Mapping) else _clone

    def coerce(value: Any) -> Any:
        if not isinstance(value, dict):
            return _clone(value)
        return {key: by_key.get(key, other)(item) for key, item in value.items()}

    return coerce


def _array_step(schema: Mapping[str, Any], root: Any) -> Coercer:
    items = schema.get("items")
    if isinstance(items, list):
        positional = [_build_coercer(sub, root) for sub in items]

        def coerce_tuple(value: Any) -> Any:
            if not isinstance(value, list):
                return _clone(value)
            head = [step(item) for step, item in zip(positional, value, strict=False)]
            return head + [_clone(item) for item in value[len(positional) :]]

        return coerce_tuple
    each = _build_coercer(items, root) if isinstance(items, Mapping) else _clone

    def coerce_each(value: Any) -> Any:
        return [each(item) for item in value] if isinstance(value, list) else _clone(value)

    return coerce_each


# --- the per-schema plan (coercion and compiled check) and its cache -----------------------------


class _Plan:
    """Everything validation needs of one schema, built once."""

    __slots__ = ("check", "coerce", "schema")

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.check = check_for(schema)
        self.coerce = _build_coercer(schema, schema)


# Tools keep their schema object for life, so identity is the cheap key of the hot path; the
# entry holds the schema, which keeps its id from being reused while the entry exists.
_plans: dict[int, tuple[Any, _Plan]] = {}


def _plan_for(tool: ToolLike) -> _Plan:
    schema = tool.parameters
    entry = _plans.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    try:
        plan = _Plan(schema)
    except JsonSchemaException as exc:
        raise ToolArgumentsError(
            f'Invalid parameters schema for tool "{tool.name}": {exc}'
        ) from exc
    remember(_plans, id(schema), (schema, plan))
    return plan
