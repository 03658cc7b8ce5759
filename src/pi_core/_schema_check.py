"""Checking tool arguments with fastjsonschema: compiled checks and upstream's error text.

A schema is compiled once into a check, shared by every equal schema, and never made to fetch a
remote ``$ref``; both the coercion plans of :mod:`pi_core._validation` and the error translation
here re-check sub-schemas through :func:`check_for`. When a check fails, :func:`issues_of` turns
fastjsonschema's first error into upstream's error lines and :func:`error_text` into the text of
the ``ToolArgumentsError``; numbers in them print as JavaScript prints them (:func:`js_number`,
which coercion to ``string`` uses too).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

import fastjsonschema
from fastjsonschema import JsonSchemaException, JsonSchemaValueException

__all__ = [
    "Check",
    "Issue",
    "check_for",
    "error_text",
    "issues_of",
    "js_number",
    "passes",
    "remember",
    "with_definitions",
]


Check = Callable[[Any], Any]
"""A compiled fastjsonschema validator: raises ``JsonSchemaValueException`` on the first error."""
Issue = tuple[str, str]
"""One error line: (dotted path, upstream's message)."""


# --- compiled validators and the cache bound -----------------------------------------------------

_CACHE_SIZE: Final = 1024

# Compiling is the expensive part, so validators are shared by every equal schema.
_checks: dict[str, Check] = {}


def check_for(schema: Any) -> Check:
    key = json.dumps(schema, sort_keys=True, default=repr)
    check = _checks.get(key)
    if check is None:
        check = fastjsonschema.compile(schema, handlers=_NO_REMOTE_REFS, use_default=False)
        remember(_checks, key, check)
    return check


def remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= _CACHE_SIZE:
        del cache[next(iter(cache))]  # oldest first: a bound, not a policy
    cache[key] = value


def _refuse_remote_ref(uri: str) -> Any:
    # A tool schema must not make validation fetch URLs or read files.
    raise JsonSchemaException(f"remote $ref is not supported: {uri}")


_NO_REMOTE_REFS: Final[dict[str, Callable[[str], Any]]] = dict.fromkeys(
    ("http", "https", "file", "ftp"), _refuse_remote_ref
)


def with_definitions(schema: Any, root: Any) -> Any:
    """A sub-schema validated on its own still needs the root's local ``$ref`` targets."""
    if not isinstance(schema, Mapping) or not isinstance(root, Mapping):
        return schema
    extra = {key: root[key] for key in ("$defs", "definitions") if key in root}
    return {**extra, **schema} if extra else schema


def passes(check: Check, value: Any) -> bool:
    try:
        check(value)
    except JsonSchemaValueException:
        return False
    return True


# --- JavaScript-flavoured number text ------------------------------------------------------------


def js_number(number: float) -> str:
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


# --- translating fastjsonschema's error into upstream's lines ------------------------------------


def error_text(tool_name: str, issues: list[Issue], args: Any) -> str:
    lines = "\n".join(f"  - {path or 'root'}: {message}" for path, message in issues)
    # ensure_ascii=False: JSON.stringify keeps non-ASCII text as it is, and so does the model.
    received = json.dumps(args, indent=2, ensure_ascii=False, default=repr)
    return (
        f'Validation failed for tool "{tool_name}":\n'
        f"{lines or 'Unknown validation error'}\n\nReceived arguments:\n{received}"
    )


_INDEX: Final = re.compile(r"\[(\d+)\]")


def _relative_path(name: str | None) -> str:
    """``data.items[0].x`` → ``items.0.x``; upstream also turns a ``/`` inside a key into ``.``."""
    rest = (name or "data")[len("data") :]
    rest = _INDEX.sub(r".\1", rest)
    return rest[1:].replace("/", ".") if rest.startswith(".") else rest.replace("/", ".")


def _join(base: str, tail: str) -> str:
    return f"{base}.{tail}" if base and tail else base or tail


def issues_of(exc: JsonSchemaValueException, root: Any, base: str) -> list[Issue]:
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
        return f"must be {operator} {js_number(limit)}"

    return message


def _items_limit(items: Any, _definition: Mapping[str, Any]) -> str:
    count = len(items) if isinstance(items, list) else 0
    return f"must not have more than {count} items"


_MESSAGES: Final[dict[str, Callable[[Any, Mapping[str, Any]], str]]] = {
    "type": _type_message,
    "minimum": _bound(">=", ">", "exclusiveMinimum"),
    "maximum": _bound("<=", "<", "exclusiveMaximum"),
    "exclusiveMinimum": lambda limit, _: f"must be > {js_number(limit)}",
    "exclusiveMaximum": lambda limit, _: f"must be < {js_number(limit)}",
    "multipleOf": lambda factor, _: f"must be multiple of {js_number(factor)}",
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
            check_for(with_definitions(alternative, root))(value)
        except JsonSchemaValueException as exc:
            lines.extend(issues_of(exc, root, path))
    return lines


def _property_names(
    exc: JsonSchemaValueException, definition: Mapping[str, Any], path: str, root: Any
) -> list[Issue]:
    check = check_for(with_definitions(definition.get("propertyNames", True), root))
    value = exc.value if isinstance(exc.value, Mapping) else {}
    invalid = [str(key) for key in value if not passes(check, key)]
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
