"""Checking tool arguments with fastjsonschema: compiled checks, local references, the frame.

A schema is compiled once into a check, shared by every equal schema, and never made to fetch a
remote ``$ref``. Coercion (:mod:`pi_core._schema_coerce`) and the error lines
(:mod:`pi_core._schema_explain`) re-check sub-schemas through :func:`passes_schema`.
:func:`validation_failed_text` is the frame of a failed validation; numbers in texts print as
JavaScript prints them (:func:`js_number`, which coercion to ``string`` uses too). Besides the
formats fastjsonschema knows, ``uuid``, ``duration`` and ``url`` are checked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

import fastjsonschema
from fastjsonschema import JsonSchemaException, JsonSchemaValueException

__all__ = [
    "UNRESOLVED",
    "Check",
    "Issue",
    "check_for",
    "js_number",
    "passes",
    "passes_schema",
    "remember",
    "resolve_ref",
    "validation_failed_text",
    "with_definitions",
    "without_dangling_refs",
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
        # The extra formats only where a format is named: with them, a check is a partial with
        # keywords, which costs every call.
        formats = _FORMATS if '"format"' in key else {}
        check = fastjsonschema.compile(
            schema, handlers=_NO_REMOTE_REFS, formats=formats, use_default=False
        )
        remember(_checks, key, check)
    return check


def remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= _CACHE_SIZE:
        del cache[next(iter(cache))]  # oldest first: a bound, not a policy
    cache[key] = value


_FORMATS: Final[dict[str, str]] = {
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "duration": (r"^P(?!$)((\d+Y)?(\d+M)?(\d+W)?(\d+D)?)(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$"),
    "url": r"^(?:https?|wss?|ftp)://[^\s/$.?#][^\s]*$",
}


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


def passes_schema(schema: Any, root: Any, value: Any) -> bool | None:
    """Whether ``value`` passes the sub-schema ``schema`` of ``root``; ``None`` when the
    sub-schema cannot be compiled on its own."""
    if schema is True or schema is False:
        return schema
    # Schemas live as long as their tools: identity is the cheap key; the entry keeps both
    # objects alive, so their ids are not reused while it exists.
    key = (id(schema), id(root))
    entry = _sub_checks.get(key)
    if entry is None or entry[0] is not schema or entry[1] is not root:
        try:
            check: Check | None = check_for(with_definitions(schema, root))
        except JsonSchemaException:
            check = None
        entry = (schema, root, check)
        remember(_sub_checks, key, entry)
    return None if entry[2] is None else passes(entry[2], value)


_sub_checks: dict[tuple[int, int], tuple[Any, Any, Check | None]] = {}


def resolve_ref(ref: str, root: Any) -> Any:
    """The target of a local ``$ref`` (``#``, ``#/$defs/X`` …) in ``root``; ``None`` for a
    reference that names nothing here (a remote one, or a dangling pointer)."""
    if not ref.startswith("#"):
        return None
    node = root
    for token in ref[1:].split("/")[1:]:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


UNRESOLVED: Final = "x-pi-core-unresolved-ref"
"""Marks the node that replaced a ``$ref`` naming nothing; its value is the reference."""


def without_dangling_refs(schema: Any) -> Any:
    """``schema`` with every ``$ref`` that names nothing in it (a remote one, or a dangling
    definition, as some MCP servers publish) replaced by a node no value passes: such a
    reference rejects only the values at its place instead of the whole schema. The schema
    itself when it has none."""

    def patched(node: Any) -> Any:
        if isinstance(node, list):
            items = [patched(item) for item in node]
            return node if all(a is b for a, b in zip(items, node, strict=True)) else items
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and resolve_ref(ref, schema) is None:
            return {"not": {}, UNRESOLVED: ref}
        members = {key: patched(value) for key, value in node.items()}
        return node if all(members[key] is node[key] for key in node) else members

    return patched(schema)


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


# --- the frame of a failed validation -----------------------------------------------------------


def validation_failed_text(tool_name: str, issues: list[Issue], args: Any) -> str:
    """The text of a failed validation: one line per issue, then the arguments as received."""
    lines = "\n".join(f"  - {path or 'root'}: {message}" for path, message in issues)
    # ensure_ascii=False: JSON.stringify keeps non-ASCII text as it is, and so does the model.
    received = json.dumps(args, indent=2, ensure_ascii=False, default=repr)
    return (
        f'Validation failed for tool "{tool_name}":\n'
        f"{lines or 'Unknown validation error'}\n\nReceived arguments:\n{received}"
    )
