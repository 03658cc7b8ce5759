"""Tool-argument validation: upstream's JSON-Schema coercion, then a cached fastjsonschema check.

:func:`validate_tool_arguments` runs on every tool call, so everything that depends only on the
schema (the coercion plan and the compiled validator) is built once and cached; a cached call
walks the arguments once to copy and coerce them and runs one compiled validator.

Coercion follows upstream's ``coerceWithJsonSchema`` (reference §5 step 3). A few choices that
the TypeScript original did not have to make, because JavaScript has a single number type:

* A string coerced to ``number`` becomes an ``int`` when it is an integer literal (``"42"``),
  else a ``float`` (``"2.5"``, ``"42.0"``, ``"1e3"``). Only decimal notation is read; surrounding
  whitespace is ignored, as JavaScript's ``Number()`` ignores it.
* Under ``integer``, a float with an integral value (``4.0``) becomes ``4``: in JavaScript it
  already *is* ``4``.
* Numbers coerced to ``string`` print as JavaScript prints them (``2.0`` → ``"2"``).
* ``$ref`` is not followed while coercing (upstream does not either); validation resolves it.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final, Protocol, cast

import fastjsonschema
from fastjsonschema import JsonSchemaException, JsonSchemaValueException

from ._exceptions import ToolArgumentsError
from ._messages import ToolCall

__all__ = ["validate_tool_arguments"]

Coercer = Callable[[Any], Any]
"""Returns a coerced copy of a value; never mutates it and never returns a shared container."""
Check = Callable[[Any], Any]
"""A compiled fastjsonschema validator: raises ``JsonSchemaValueException`` on the first error."""
Issue = tuple[str, str]
"""One error line: (dotted path, upstream's message)."""


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
        issues = _issues(exc, plan.schema, "")
        raise ToolArgumentsError(_error_text(tool_call.name, issues, args)) from None
    # A dict whenever the schema asks for an object, which a tool's schema always does.
    return cast("dict[str, Any]", coerced)


def _error_text(tool_name: str, issues: list[Issue], args: Any) -> str:
    lines = "\n".join(f"  - {path or 'root'}: {message}" for path, message in issues)
    # ensure_ascii=False: JSON.stringify keeps non-ASCII text as it is, and so does the model.
    received = json.dumps(args, indent=2, ensure_ascii=False, default=repr)
    return (
        f'Validation failed for tool "{tool_name}":\n'
        f"{lines or 'Unknown validation error'}\n\nReceived arguments:\n{received}"
    )


# --- copying and JavaScript-flavoured number text ------------------------------------------------

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


def _js_number(number: float) -> str:
    """Format a number as JavaScript's ``String(number)`` does (``2.0`` → ``"2"``)."""
    if isinstance(number, int):
        return str(number)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    magnitude = abs(number)
    if number.is_integer() and magnitude < 1e21:
        return str(int(number))
    if 1e-6 <= magnitude < 1e21:
        return format(Decimal(repr(number)), "f")
    # Exponent form: JavaScript writes "1e-7" and "1e+21" where Python writes "1e-07".
    mantissa, _, exponent = repr(number).partition("e")
    return f"{mantissa}e{exponent[0]}{int(exponent[1:])}"


# --- primitive coercions (reference §5 step 3, "type") -------------------------------------------


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
        return _js_number(value)
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
        (_build_coercer(alternative, root), _check_for(_with_definitions(alternative, root)))
        for alternative in alternatives
    ]

    def coerce(value: Any) -> Any:
        for coerce_option, check in options:
            candidate = coerce_option(value)
            if _passes(check, candidate):
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


# --- compiled validators and the per-schema cache ------------------------------------------------

_CACHE_SIZE: Final = 1024


class _Plan:
    """Everything validation needs of one schema, built once."""

    __slots__ = ("check", "coerce", "schema")

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.check = _check_for(schema)
        self.coerce = _build_coercer(schema, schema)


# Tools keep their schema object for life, so identity is the cheap key of the hot path; the
# entry holds the schema, which keeps its id from being reused while the entry exists.
_plans: dict[int, tuple[Any, _Plan]] = {}
# Compiling is the expensive part, so validators are shared by every equal schema.
_checks: dict[str, Check] = {}


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
    _remember(_plans, id(schema), (schema, plan))
    return plan


def _check_for(schema: Any) -> Check:
    key = json.dumps(schema, sort_keys=True, default=repr)
    check = _checks.get(key)
    if check is None:
        check = fastjsonschema.compile(schema, handlers=_NO_REMOTE_REFS, use_default=False)
        _remember(_checks, key, check)
    return check


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= _CACHE_SIZE:
        del cache[next(iter(cache))]  # oldest first: a bound, not a policy
    cache[key] = value


def _refuse_remote_ref(uri: str) -> Any:
    # A tool schema must not make validation fetch URLs or read files.
    raise JsonSchemaException(f"remote $ref is not supported: {uri}")


_NO_REMOTE_REFS: Final[dict[str, Callable[[str], Any]]] = dict.fromkeys(
    ("http", "https", "file", "ftp"), _refuse_remote_ref
)


def _with_definitions(schema: Any, root: Any) -> Any:
    """A sub-schema validated on its own still needs the root's local ``$ref`` targets."""
    if not isinstance(schema, Mapping) or not isinstance(root, Mapping):
        return schema
    extra = {key: root[key] for key in ("$defs", "definitions") if key in root}
    return {**extra, **schema} if extra else schema


def _passes(check: Check, value: Any) -> bool:
    try:
        check(value)
    except JsonSchemaValueException:
        return False
    return True


# --- translating fastjsonschema's error into upstream's lines ------------------------------------

_INDEX: Final = re.compile(r"\[(\d+)\]")


def _relative_path(name: str | None) -> str:
    """``data.items[0].x`` → ``items.0.x``; upstream also turns a ``/`` inside a key into ``.``."""
    rest = (name or "data")[len("data") :]
    rest = _INDEX.sub(r".\1", rest)
    return rest[1:].replace("/", ".") if rest.startswith(".") else rest.replace("/", ".")


def _join(base: str, tail: str) -> str:
    return f"{base}.{tail}" if base and tail else base or tail


def _issues(exc: JsonSchemaValueException, root: Any, base: str) -> list[Issue]:
    """Upstream's error lines for fastjsonschema's (first) error, at ``base`` + its path."""
    path = _join(base, _relative_path(exc.name))
    definition = exc.definition if isinstance(exc.definition, Mapping) else {}
    special = _SPECIAL_RULES.get(exc.rule or "")
    if special is not None:
        return special(exc, definition, path, root)
    message = _simple_message(exc, definition)
    return [(path, message)]


def _simple_message(exc: JsonSchemaValueException, definition: Mapping[str, Any]) -> str:
    rule = exc.rule or ""
    template = _MESSAGES.get(rule)
    if template is not None:
        return template(definition.get(rule), definition)
    if exc.definition is False:
        return "schema is false"
    # A rule without an upstream wording: fastjsonschema's own message, minus its "data.x" prefix.
    prefix = f"{exc.name} "
    return exc.message[len(prefix) :] if exc.message.startswith(prefix) else exc.message


def _type_message(expected: Any, _definition: Mapping[str, Any]) -> str:
    if isinstance(expected, str):
        return f"must be {expected}"
    names = list(expected)
    return f"must be {names[0]}" if len(names) == 1 else f"must be either {' or '.join(names)}"


def _bound(inclusive: str, exclusive: str, flag: str) -> Callable[[Any, Mapping[str, Any]], str]:
    # Draft 4 spells an exclusive bound as minimum + "exclusiveMinimum": true.
    def message(limit: Any, definition: Mapping[str, Any]) -> str:
        operator = exclusive if definition.get(flag) is True else inclusive
        return f"must be {operator} {_js_number(limit)}"

    return message


def _items_limit(items: Any, _definition: Mapping[str, Any]) -> str:
    count = len(items) if isinstance(items, list) else 0
    return f"must not have more than {count} items"


_MESSAGES: Final[dict[str, Callable[[Any, Mapping[str, Any]], str]]] = {
    "type": _type_message,
    "minimum": _bound(">=", ">", "exclusiveMinimum"),
    "maximum": _bound("<=", "<", "exclusiveMaximum"),
    "exclusiveMinimum": lambda limit, _: f"must be > {_js_number(limit)}",
    "exclusiveMaximum": lambda limit, _: f"must be < {_js_number(limit)}",
    "multipleOf": lambda factor, _: f"must be multiple of {_js_number(factor)}",
    "minLength": lambda limit, _: f"must not have fewer than {limit} characters",
    "maxLength": lambda limit, _: f"must not have more than {limit} characters",
    "pattern": lambda pattern, _: f'must match pattern "{pattern}"',
    "format": lambda name, _: f'must match format "{name}"',
    "enum": lambda _values, _: "must be equal to one of the allowed values",
    "const": lambda _value, _: "must be equal to constant",
    "minItems": lambda limit, _: f"must not have fewer than {limit} items",
    "maxItems": lambda limit, _: f"must not have more than {limit} items",
    "uniqueItems": lambda _flag, _: "must not have duplicate items",
    "items": _items_limit,
    "contains": lambda _schema, _: "must contain at least 1 valid item",
    "minProperties": lambda limit, _: f"must not have fewer than {limit} properties",
    "maxProperties": lambda limit, _: f"must not have more than {limit} properties",
    "not": lambda _schema, _: "must not be valid",
}


SpecialRule = Callable[[JsonSchemaValueException, Mapping[str, Any], str, Any], list[Issue]]


def _required(
    exc: JsonSchemaValueException, definition: Mapping[str, Any], path: str, _root: Any
) -> list[Issue]:
    value = exc.value if isinstance(exc.value, Mapping) else {}
    missing = [str(key) for key in definition.get("required", ()) if key not in value]
    # Upstream points at the first missing property and still names all of them.
    where = _join(path, missing[0]) if missing else path
    return [(where, f"must have required properties {', '.join(missing)}")]


def _additional(
    exc: JsonSchemaValueException, definition: Mapping[str, Any], path: str, _root: Any
) -> list[Issue]:
    known = definition.get("properties") or {}
    patterns = list(definition.get("patternProperties") or {})
    value = exc.value if isinstance(exc.value, Mapping) else {}
    extra = [
        str(key)
        for key in value
        if key not in known and not any(re.search(pattern, str(key)) for pattern in patterns)
    ]
    lines = [(_join(path, key), "schema is false") for key in extra]
    return [*lines, (path, "must not have additional properties")]


def _any_of(
    exc: JsonSchemaValueException, definition: Mapping[str, Any], path: str, root: Any
) -> list[Issue]:
    # Upstream lists why each alternative failed before the anyOf line itself.
    failures = _alternative_failures(exc.value, definition.get("anyOf") or [], path, root)
    return [*failures, (path, "must match a schema in anyOf")]


def _one_of(
    exc: JsonSchemaValueException, definition: Mapping[str, Any], path: str, root: Any
) -> list[Issue]:
    alternatives = definition.get("oneOf") or []
    failures = _alternative_failures(exc.value, alternatives, path, root)
    # When several alternatives matched there is nothing to explain per alternative.
    lines = failures if len(failures) >= len(alternatives) else []
    return [*lines, (path, "must match exactly one schema in oneOf")]


def _alternative_failures(value: Any, alternatives: list[Any], path: str, root: Any) -> list[Issue]:
    lines: list[Issue] = []
    for alternative in alternatives:
        try:
            _check_for(_with_definitions(alternative, root))(value)
        except JsonSchemaValueException as exc:
            lines.extend(_issues(exc, root, path))
    return lines


def _property_names(
    exc: JsonSchemaValueException, definition: Mapping[str, Any], path: str, root: Any
) -> list[Issue]:
    check = _check_for(_with_definitions(definition.get("propertyNames", True), root))
    value = exc.value if isinstance(exc.value, Mapping) else {}
    invalid = [str(key) for key in value if not _passes(check, key)]
    return [(path, f"property names {', '.join(invalid)} are invalid")]


def _dependencies(
    exc: JsonSchemaValueException, definition: Mapping[str, Any], path: str, _root: Any
) -> list[Issue]:
    value = exc.value if isinstance(exc.value, Mapping) else {}
    for key, needed in (definition.get("dependencies") or {}).items():
        if key in value and isinstance(needed, list) and any(n not in value for n in needed):
            names = ", ".join(str(name) for name in needed)
            return [(path, f"must have properties {names} when property {key} is present")]
    return [(path, _simple_message(exc, {}))]


_SPECIAL_RULES: Final[dict[str, SpecialRule]] = {
    "required": _required,
    "additionalProperties": _additional,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "propertyNames": _property_names,
    "dependencies": _dependencies,
}
