"""Coercing a model's loosely typed tool arguments towards their JSON Schema, in three passes.

Models send ``"42"`` for a number, ``"TRUE"`` for a boolean, one value where a list is asked
for, or ``null`` for an optional property they meant to leave out. Before arguments are checked
they go through three passes, in this order:

1. **Optional nulls**: a ``null`` in a property that is not required and whose schema rejects
   ``null`` is dropped, as if the property were left out (its default then applies).
2. **Conversions by keyword**: a node's first keyword among ``$ref``, ``const``, ``enum``,
   ``anyOf`` / ``oneOf``, ``allOf`` and a single ``type`` decides. A literal takes the member the
   value converts to; a union keeps a value one branch accepts, else the first branch conversion
   the whole union accepts; a type converts (numeric strings, ``"true"`` / ``"1"`` booleans,
   integers truncated, ``null`` as ``"null"`` for a string, a single value wrapped into a list;
   tuples never wrap); objects and arrays convert their members.
3. **Primitive coercion by type**, for what is left (type lists such as
   ``["integer", "null"]``): the first listed type the value can be coerced to, unless it
   already has one of them.

A value that cannot be coerced stays as it is, and the check reports it. Every pass copies a
container only when one of its members changes. The passes never modify their input.

Python has two number types where JavaScript has one: a number read from a string is an ``int``
when it is integral and written without a fraction or exponent (``"42"``), else a ``float``
(``"2.5"``, ``"1e3"``); under ``integer`` every result is an ``int``. Numbers become strings as
JavaScript prints them (``2.0`` -> ``"2"``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._schema_check import js_number, passes_schema, resolve_ref

__all__ = ["Coercer"]


class _Unchanged:
    """Marks "no rule applies" (``None`` is a legitimate result)."""


_NO: Final = _Unchanged()


class Coercer:
    """The three passes for one root schema, read once into one :class:`_Node` per schema node
    (a tool's schema lives as long as the tool, and so does its coercer)."""

    __slots__ = ("_entered", "_first", "_nodes", "_third", "root", "top")

    def __init__(self, root: Any) -> None:
        self.root = root
        self._nodes: dict[int, _Node] = {}
        # (node, value) pairs being converted through a ``$ref`` or a wrap: a recursive schema
        # meeting a value nothing accepts would otherwise convert it without end.
        self._entered: list[tuple[_Node, Any]] = []
        self.top = self.node(root)
        self._first, self._third = True, True
        if self.top is not None:
            self._first = self._may_drop(self.top, {})
            self._third = self._types_matter(self.top, {})

    def __call__(self, value: Any) -> Any:
        """``value`` coerced by the three passes; never modified itself (an unchanged
        container comes back as the same object)."""
        top = self.top
        if top is None:
            return value
        if self._first:
            value = self.drop_optional_nulls(top, value)
        if top.mode is not _OBJECT or type(value) is not dict:
            value = self.convert(top, value)
        elif value:  # a tool's schema, an object: its members at once (no call for none)
            value = _map_members(top, value, self.convert, converting=True)
        return self.coerce_types(top, value) if self._third else value

    def node(self, schema: Any) -> _Node | None:
        """The node of a sub-schema (``None`` for one that is not an object)."""
        if not isinstance(schema, Mapping):
            return None
        found = self._nodes.get(id(schema))
        if found is None or found.schema is not schema:
            found = self._nodes[id(schema)] = _Node(schema, self)
        return found

    def passes(self, node: _Node, value: Any) -> bool | None:
        return passes_schema(node.schema, self.root, value)

    # what a schema needs, worked out once: most need neither pass 1 nor pass 3

    def _may_drop(self, node: _Node, seen: dict[int, bool]) -> bool:
        """Whether pass 1 can drop anything at or below ``node`` (``seen``: the answers so
        far, by node; a node met again while it is being answered says yes, to be safe)."""
        if id(node) in seen:
            return seen[id(node)]
        seen[id(node)] = True
        node.droppable = tuple(
            key
            for key, sub in node.properties.items()
            if sub is not None
            and key not in node.required
            and sub.ref is None
            and self.passes(sub, None) is False
        )
        children = [sub for sub in node.children() if sub is not None]
        # Every child is visited (no short-circuit), so each one's own flag is set.
        below = [self._may_drop(sub, seen) for sub in children]
        node.may_drop = seen[id(node)] = bool(node.droppable) or any(below)
        return node.may_drop

    def _types_matter(self, node: _Node, seen: dict[int, bool]) -> bool:
        """Whether pass 3 can change anything at or below ``node`` that pass 2 has not: not
        where a single type is the very rule pass 2 applied (a primitive, or an object or
        array whose members pass 2 walked)."""
        if id(node) in seen:
            return seen[id(node)]
        seen[id(node)] = True
        children = [sub for sub in node.children() if sub is not None]
        below = [self._types_matter(sub, seen) for sub in children]
        if node.all_of or node.branches or len(node.types) > 1 or any(below):
            return True
        single = node.types[0] if node.types else None
        matters = single is not None and node.mode is not _SINGLE_TYPE_RULES.get(single, _LEAF)
        seen[id(node)] = matters
        return matters

    # pass 1: optional nulls

    def drop_optional_nulls(self, node: _Node, value: Any) -> Any:
        kind = type(value)
        if kind is list:
            if not node.may_drop:
                return value
            return _map_items(value, lambda item, i: self._drop_item(node, i, item))
        if kind is not dict or not node.may_drop:
            return value
        dropped = [key for key in node.droppable if key in value and value[key] is None]
        if dropped:
            value = {key: item for key, item in value.items() if key not in dropped}
        return _map_members(node, value, self.drop_optional_nulls)

    def _drop_item(self, node: _Node, index: int, item: Any) -> Any:
        sub = node.item_at(index)
        return item if sub is None else self.drop_optional_nulls(sub, item)

    # pass 2: conversions by keyword

    def convert(self, node: _Node, value: Any) -> Any:
        mode = node.mode
        if mode is _LEAF:
            result = node.conversion(value)  # type: ignore[misc]
            return value if result is _NO else result
        if mode is _OBJECT:
            return self._object(node, value)
        if mode is _ARRAY:
            return self._array(node, value)
        if mode is _REF:
            if node.target is None:
                node.target = self.node(resolve_ref(node.ref or "", self.root)) or _NOWHERE
            target = node.target
            return value if target is _NOWHERE else self._reenter(target, value)
        if mode is _CONST:
            return _literal(node.const, value)
        if mode is _ENUM:
            return self._enum(node, value)
        if mode is _UNION:
            return self._union(node, value)
        if mode is _ALL_OF:
            for part in node.all_of:
                value = self.convert(part, value)
            return self._object(node, value) if node.declares_members else value
        return value

    def _reenter(self, node: _Node, value: Any) -> Any:
        for seen, other in self._entered:
            if seen is node and _same(other, value):
                return value
        self._entered.append((node, value))
        try:
            return self.convert(node, value)
        finally:
            self._entered.pop()

    def _enum(self, node: _Node, value: Any) -> Any:
        members = node.enum
        if any(_same(member, value) for member in members):
            return value
        for member in members:
            candidate = _literal(member, value)
            if candidate is not value and self.passes(node, candidate) is True:
                return candidate
        return value

    def _union(self, node: _Node, value: Any) -> Any:
        members = self._object if node.declares_members else _itself
        if any(self.passes(branch, value) is True for branch in node.branches):
            return members(node, value)
        for branch in node.branches:
            candidate = members(node, self.convert(branch, value))
            if self.passes(node, candidate) is True:
                return candidate
        return members(node, value)

    def _array(self, node: _Node, value: Any) -> Any:
        prefix = node.prefix
        if prefix is not None:  # a tuple converts its items and never wraps
            if type(value) is not list:
                return value
            return _map_items(value, lambda item, i: self._convert_item(node, i, item))
        items = node.items
        if type(value) is list:
            if items is None:
                return value
            return _map_items(value, lambda item, _: self.convert(items, item))
        return [value if items is None else self._reenter(items, value)]

    def _convert_item(self, node: _Node, index: int, item: Any) -> Any:
        sub = node.item_at(index)
        return item if sub is None else self.convert(sub, item)

    def _object(self, node: _Node, value: Any) -> Any:
        if type(value) is not dict:
            return value
        return _map_members(node, value, self.convert, converting=True)

    # pass 3: primitive coercion by type

    def coerce_types(self, node: _Node, value: Any) -> Any:
        for part in node.all_of:
            value = self.coerce_types(part, value)
        if node.branches:
            value = self._coerce_union(node.branches, value)
        types = node.types
        if not types:
            return value
        if len(types) == 1 or not any(_has_type(value, name) for name in types):
            for name in types:
                result = _coerce_primitive(value, name)
                if result is not _NO:
                    value = result
                    break
        elif type(value) is float and node.integer_only:
            value = _integral(value)
        kind = type(value)
        if kind is dict and node.object_type:
            return _map_members(node, value, self.coerce_types)
        if kind is list and node.array_type:
            return _map_items(value, lambda item, i: self._coerce_item(node, i, item))
        return value

    def _coerce_item(self, node: _Node, index: int, item: Any) -> Any:
        sub = node.item_at(index)
        return item if sub is None else self.coerce_types(sub, item)

    def _coerce_union(self, branches: list[_Node], value: Any) -> Any:
        if any(self.passes(branch, value) is True for branch in branches):
            return value
        for branch in branches:
            coerced = self.coerce_types(branch, value)
            if self.passes(branch, coerced) is True:
                return coerced
        return value


def _itself(_node: Any, value: Any) -> Any:
    return value


# --- JavaScript's view of values ------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    """A finite JSON number (``bool`` is not one)."""
    kind = type(value)
    if kind is int:
        return True
    return kind is float and math.isfinite(value)


def _same(a: Any, b: Any) -> bool:
    """JavaScript's ``===``: primitives by type and value, containers by identity."""
    if a is b:
        return True
    kind_a, kind_b = type(a), type(b)
    if kind_a is bool or kind_b is bool:
        return kind_a is kind_b and a == b
    if kind_a in (int, float) and kind_b in (int, float):
        return bool(a == b)
    return kind_a is str and kind_b is str and a == b


_DECIMAL: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGRAL: Final = re.compile(r"[+-]?\d+", re.ASCII)
_RADIX: Final = re.compile(r"0([xXoObB])([0-9a-fA-F]+)", re.ASCII)
_RADIX_BASES: Final = {"x": 16, "o": 8, "b": 2}
_BIG: Final = re.compile(r"-?(?:0|[1-9]\d*)n", re.ASCII)
_JS_SPACE: Final = " \t\n\r\v\f\u00a0\ufeff\u2028\u2029"


def _js_number_of(text: str) -> Any:
    """JavaScript's ``Number(text)`` for the finite results; ``_NO`` for NaN and infinities."""
    stripped = text.strip(_JS_SPACE)
    if not stripped:
        return 0
    if _INTEGRAL.fullmatch(stripped):
        return int(stripped)
    if _DECIMAL.fullmatch(stripped):
        number = float(stripped)
        return number if math.isfinite(number) else _NO
    radix = _RADIX.fullmatch(stripped)
    if radix is not None:
        try:
            return int(radix[2], _RADIX_BASES[radix[1].lower()])
        except ValueError:  # digits outside the base ("0b12")
            return _NO
    return _NO


def _try_number(value: Any) -> Any:
    if _is_number(value):
        return value
    if type(value) is bool:
        return int(value)
    if value is None:
        return 0
    if not isinstance(value, str):
        return _NO
    number = _js_number_of(value)
    if number is not _NO:
        return number
    lower = value.lower()
    if lower in ("true", "false"):
        return int(lower == "true")
    if _BIG.fullmatch(value):  # a BigInt literal, "12n"
        return int(value[:-1])
    return _NO


def _try_integer(value: Any) -> Any:
    number = _try_number(value)
    return number if number is _NO else int(number)


def _try_string(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if _is_number(value):
        return js_number(value)
    if value is None:
        return "null"
    return _NO


def _try_boolean(value: Any) -> Any:
    if type(value) is bool:
        return value
    if _is_number(value):
        return False if value == 0 else True if value == 1 else _NO
    if value is None:
        return False
    if not isinstance(value, str):
        return _NO
    lower = value.lower()
    if lower == "false" or value == "0":
        return False
    if lower == "true" or value == "1":
        return True
    return _NO


def _try_null(value: Any) -> Any:
    if value is None or value is False or (_is_number(value) and value == 0):
        return None
    if isinstance(value, str) and (value.lower() in ("undefined", "null") or value in ("", "0")):
        return None
    return _NO


_CONVERSIONS: Final[dict[str, Callable[[Any], Any]]] = {
    "string": _try_string,
    "number": _try_number,
    "integer": _try_integer,
    "boolean": _try_boolean,
    "null": _try_null,
}


def _literal(literal: Any, value: Any) -> Any:
    """A ``const`` / ``enum`` member taken from a value of another type that converts to it."""
    if _same(literal, value):
        return value
    if isinstance(literal, str):
        result = _try_string(value)
    elif type(literal) is bool:
        result = _try_boolean(value)
    elif _is_number(literal):
        result = _try_number(value)
    else:
        return value
    return result if result is not _NO and _same(result, literal) else value


# --- one schema node, read once ------------------------------------------------------------------

_LEAF: Final = "leaf"
_OBJECT: Final = "object"
_ARRAY: Final = "array"
_REF: Final = "ref"
_CONST: Final = "const"
_ENUM: Final = "enum"
_UNION: Final = "union"
_ALL_OF: Final = "allOf"
_INERT: Final = "inert"
_SINGLE_TYPE_RULES: Final = {"object": _OBJECT, "array": _ARRAY}
"""The pass-2 rule that already does what pass 3 would for a node of this single type."""


class _Node:
    """What the passes need of one schema node, with its sub-schemas as nodes."""

    __slots__ = (
        "all_of",
        "array_type",
        "branches",
        "const",
        "conversion",
        "declares_members",
        "droppable",
        "enum",
        "extra",
        "integer_only",
        "items",
        "may_drop",
        "members_inert",
        "mode",
        "object_type",
        "patterns",
        "prefix",
        "properties",
        "ref",
        "required",
        "rest",
        "schema",
        "target",
        "types",
    )

    def __init__(self, schema: Mapping[str, Any], coercer: Coercer) -> None:
        self.schema = schema
        get = schema.get
        node = coercer.node
        ref = get("$ref")
        self.ref = ref if isinstance(ref, str) else None
        self.target: _Node | None = None
        """The node ``ref`` names, once looked up (``_NOWHERE`` when it names nothing)."""
        self.const = get("const")
        enum = get("enum")
        self.enum: list[Any] = enum if isinstance(enum, list) else []
        self.branches: list[_Node] = []
        for keyword in ("anyOf", "oneOf"):
            found = get(keyword)
            if isinstance(found, list) and not self.branches:
                self.branches = _nodes(found, node)
        parts = get("allOf")
        self.all_of: list[_Node] = _nodes(parts, node) if isinstance(parts, list) else []
        self._read_type(get("type"), "type" in schema)
        self._read_members(schema, node)
        self._read_items(schema, node)
        self.mode = self._mode(schema)
        self.may_drop = True  # until the coercer has looked below it
        self.droppable: tuple[str, ...] = ()
        """The optional properties whose schema rejects ``null``: pass 1 drops their nulls."""

    def _read_type(self, declared: Any, typed: bool) -> None:
        if isinstance(declared, str):
            self.types: list[str] = [declared]
        elif isinstance(declared, list):
            self.types = [name for name in declared if isinstance(name, str)]
        else:
            self.types = []
        self.conversion = _CONVERSIONS.get(declared) if isinstance(declared, str) else None
        self.object_type = "object" in self.types
        self.array_type = "array" in self.types
        self.integer_only = "integer" in self.types and "number" not in self.types

    def _read_members(self, schema: Mapping[str, Any], node: Callable[[Any], _Node | None]) -> None:
        properties = schema.get("properties")
        self.properties: dict[str, _Node | None] = (
            {key: node(sub) for key, sub in properties.items()}
            if isinstance(properties, Mapping)
            else {}
        )
        found = schema.get("patternProperties")
        self.patterns: list[tuple[re.Pattern[str], _Node | None]] = (
            [(_regex(pattern), node(sub)) for pattern, sub in found.items()]
            if isinstance(found, Mapping)
            else []
        )
        self.extra = node(schema.get("additionalProperties"))
        required = schema.get("required")
        self.required = frozenset(required) if isinstance(required, list) else frozenset()
        self.declares_members = any(
            key in schema for key in ("properties", "patternProperties", "additionalProperties")
        )
        self.members_inert = not (
            isinstance(properties, Mapping) or self.patterns or self.extra is not None
        )

    def _read_items(self, schema: Mapping[str, Any], node: Callable[[Any], _Node | None]) -> None:
        items = schema.get("items")
        prefix = items if isinstance(items, list) else schema.get("prefixItems")
        self.prefix: list[_Node | None] | None = (
            [node(sub) for sub in prefix] if isinstance(prefix, list) else None
        )
        self.rest = None if isinstance(items, list) else node(items)
        self.items = None if isinstance(items, list) else self.rest

    def _mode(self, schema: Mapping[str, Any]) -> str:
        """Pass 2's rule: the node's first keyword among $ref, const, enum, the unions, allOf,
        then its single type."""
        if self.ref is not None:
            return _REF
        if "const" in schema:
            return _CONST
        if isinstance(schema.get("enum"), list):
            return _ENUM
        if self.branches:
            return _UNION
        if isinstance(schema.get("allOf"), list):
            return _ALL_OF
        declared = schema.get("type")
        if self.conversion is not None:
            return _LEAF
        if declared == "object":
            return _OBJECT
        if declared == "array":
            return _ARRAY
        if "type" not in schema:
            if "properties" in schema or "patternProperties" in schema:
                return _OBJECT
            if "items" in schema or "prefixItems" in schema:
                return _ARRAY
        return _INERT

    def children(self) -> list[_Node | None]:
        """Every sub-schema node the passes walk into (a ``$ref``'s target excepted)."""
        return [
            *self.properties.values(),
            *(sub for _, sub in self.patterns),
            self.extra,
            *(self.prefix or ()),
            self.rest,
            *self.all_of,
            *self.branches,
        ]

    def item_at(self, index: int) -> _Node | None:
        """The schema of an array's item at ``index``: a tuple's for its prefix, else
        ``items``."""
        prefix = self.prefix
        if prefix is not None and index < len(prefix):
            return prefix[index]
        return self.rest


_NOWHERE: Final = _Node({}, Coercer(None))
"""The target of a ``$ref`` that names nothing: conversion leaves the value."""


def _nodes(schemas: list[Any], node: Callable[[Any], _Node | None]) -> list[_Node]:
    return [found for found in map(node, schemas) if found is not None]


# --- walking members ------------------------------------------------------------------------------


def _map_items(items: list[Any], step: Callable[[Any, int], Any]) -> list[Any]:
    out: list[Any] | None = None
    for index, item in enumerate(items):
        new = step(item, index)
        if new is not item:
            if out is None:
                out = list(items)
            out[index] = new
    return items if out is None else out


_regexes: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    compiled = _regexes.get(pattern)
    if compiled is None:
        compiled = _regexes[pattern] = re.compile(pattern)
    return compiled


def _map_members(
    node: _Node,
    value: dict[str, Any],
    step: Callable[[_Node, Any], Any],
    *,
    converting: bool = False,
) -> dict[str, Any]:
    """Each member stepped by its ``properties`` node, then its matching ``patternProperties``,
    else a schema-valued ``additionalProperties``; a copy only when one changes."""
    if node.members_inert:
        return value
    properties = node.properties
    patterns = node.patterns
    other = node.extra
    out: dict[str, Any] | None = None
    for key, item in value.items():
        new = item
        matched = key in properties
        if matched:
            sub = properties[key]
            if sub is None:
                pass
            elif converting and sub.mode is _LEAF:
                # The common member, a primitive, converted here: one call fewer per argument.
                result = sub.conversion(item)  # type: ignore[misc]
                new = item if result is _NO else result
            else:
                new = step(sub, new)
        for pattern, sub in patterns:
            if pattern.search(key):
                matched = True
                if sub is not None:
                    new = step(sub, new)
        if not matched and other is not None:
            new = step(other, new)
        if new is not item:
            if out is None:
                out = dict(value)
            out[key] = new
    return value if out is None else out


# --- pass 3's rules --------------------------------------------------------------------------------


def _integral(value: float) -> Any:
    """An integral float is the integer it equals (in JavaScript it is one): ``4.0`` -> ``4``."""
    return int(value) if value.is_integer() else value


def _has_type(value: Any, name: str) -> bool:
    if name == "number":
        return _is_number(value)
    if name == "integer":
        return type(value) is int or (type(value) is float and value.is_integer())
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return type(value) is bool
    if name == "null":
        return value is None
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return type(value) is dict
    return False


def _coerce_primitive(value: Any, name: str) -> Any:
    """Pass 3's rule for one type: a changed value, or ``_NO``."""
    if name in ("number", "integer"):
        return _number_primitive(value, name == "integer")
    if name == "boolean":
        if value is None:
            return False
        if value == "true" or (_is_number(value) and value == 1):
            return True
        if value == "false" or (_is_number(value) and value == 0):
            return False
        return _NO
    if name == "string":
        if value is None:
            return ""
        if type(value) is bool:
            return "true" if value else "false"
        return js_number(value) if isinstance(value, (int, float)) else _NO
    if name == "null":
        if value == "" or value is False or (_is_number(value) and value == 0):
            return None
        return _NO
    return _NO


def _number_primitive(value: Any, integer: bool) -> Any:
    if value is None:
        return 0
    if type(value) is bool:
        return int(value)
    if isinstance(value, str) and value.strip(_JS_SPACE):
        number = _js_number_of(value)
        if number is _NO:
            return _NO
        if not integer:
            return number
        if type(number) is int:
            return number
        return int(number) if number.is_integer() else _NO
    if integer and type(value) is float and value.is_integer():
        return _integral(value)
    return _NO
