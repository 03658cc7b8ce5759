"""A tool's JSON Schema cut to the subset Gemini accepts for function parameters.

Gemini reads types, descriptions, enums, objects with properties and required names, arrays,
``anyOf``, numeric and length bounds and patterns; keywords outside that subset (``$schema``,
``$ref``, ``const``, ``allOf``, ``not``, type lists …) make it refuse the request or are
silently lost. The conversion keeps the meaning wherever it can:

* local ``$ref`` (into ``$defs`` / ``definitions``) are inlined; a recursive one, past a few
  levels, becomes an unconstrained schema;
* ``oneOf`` becomes ``anyOf``; ``allOf`` of objects is merged into one object, any other
  ``allOf`` keeps its first member;
* ``const`` becomes a one-value ``enum``; a type list becomes an ``anyOf`` of single types;
* ``exclusiveMinimum`` / ``exclusiveMaximum`` become the inclusive bounds;
* ``required`` keeps only names that are properties; every other keyword is dropped.

The tool still validates its arguments against its own schema, so nothing is lost on the way
back; Gemini just sees a simpler description.
"""

from __future__ import annotations

from typing import Any

__all__ = ["gemini_schema"]

Schema = dict[str, Any]

_KEPT = frozenset(
    {
        "type", "format", "title", "description", "enum", "default", "nullable",
        "minimum", "maximum", "minLength", "maxLength", "pattern",
        "minItems", "maxItems", "minProperties", "maxProperties", "propertyOrdering",
    }
)  # fmt: skip
_ANNOTATIONS = ("title", "description", "default")
_SCALARS = (str, int, float, bool)
_MAX_REF_DEPTH = 6


def gemini_schema(schema: Schema) -> Schema:
    """``schema`` in the subset Gemini accepts (a new dict; the input is not changed)."""
    definitions = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    converted = _convert(schema, definitions, 0)
    converted.setdefault("type", "object")
    return converted


def _convert(schema: object, definitions: Schema, depth: int) -> Schema:
    if not isinstance(schema, dict):
        return {}
    if "$ref" in schema:
        return _follow(schema, definitions, depth)
    for combinator in ("oneOf", "anyOf"):
        if isinstance(schema.get(combinator), list):
            return _any_of(schema, schema[combinator], definitions, depth)
    if isinstance(schema.get("allOf"), list):
        return _all_of(schema, definitions, depth)
    if isinstance(schema.get("type"), list):
        return _type_list(schema, definitions, depth)
    return _plain(schema, definitions, depth)


def _follow(schema: Schema, definitions: Schema, depth: int) -> Schema:
    name = str(schema["$ref"]).rsplit("/", 1)[-1]
    target = definitions.get(name)
    if target is None or depth >= _MAX_REF_DEPTH:
        return _annotations(schema)
    siblings = {key: value for key, value in schema.items() if key != "$ref"}
    return _convert({**target, **siblings}, definitions, depth + 1)


def _any_of(schema: Schema, members: list[Any], definitions: Schema, depth: int) -> Schema:
    rest = {key: value for key, value in schema.items() if key not in ("oneOf", "anyOf")}
    options = [_convert(member, definitions, depth) for member in members]
    if len(options) == 1:
        return {**_plain(rest, definitions, depth), **options[0]}
    return {**_plain(rest, definitions, depth), "anyOf": options}


def _all_of(schema: Schema, definitions: Schema, depth: int) -> Schema:
    members = [_convert(member, definitions, depth) for member in schema["allOf"]]
    rest = _plain({k: v for k, v in schema.items() if k != "allOf"}, definitions, depth)
    if members and all(member.get("type", "object") == "object" for member in members):
        merged: Schema = {"type": "object"}
        for member in [*members, rest]:
            properties = {**merged.get("properties", {}), **member.get("properties", {})}
            required = [*merged.get("required", []), *member.get("required", [])]
            merged.update(member)
            if properties:
                merged["properties"] = properties
            if required:
                merged["required"] = list(dict.fromkeys(required))
        return merged
    return {**(members[0] if members else {}), **rest}


def _type_list(schema: Schema, definitions: Schema, depth: int) -> Schema:
    types = [kind for kind in schema["type"] if isinstance(kind, str)]
    if len(types) == 1:
        return _convert({**schema, "type": types[0]}, definitions, depth)
    # Annotations describe the whole value; the members carry the type-specific keywords.
    outer = {key: schema[key] for key in _ANNOTATIONS if key in schema}
    rest = {key: value for key, value in schema.items() if key != "type" and key not in outer}
    options = [_plain({**rest, "type": kind}, definitions, depth) for kind in types]
    return {**outer, "anyOf": options}


def _plain(schema: Schema, definitions: Schema, depth: int) -> Schema:
    result: Schema = {key: value for key, value in schema.items() if key in _KEPT}
    if "const" in schema:
        result["enum"] = [schema["const"]]
    if "enum" in result:
        result["enum"] = [value for value in result["enum"] if isinstance(value, _SCALARS)]
    for exclusive, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        bound = schema.get(exclusive)
        if isinstance(bound, int | float) and not isinstance(bound, bool):
            result.setdefault(inclusive, bound)
    _nested(schema, result, definitions, depth)
    return result


def _nested(schema: Schema, result: Schema, definitions: Schema, depth: int) -> None:
    properties = schema.get("properties")
    if isinstance(properties, dict):
        result["properties"] = {
            name: _convert(value, definitions, depth) for name, value in properties.items()
        }
        required = schema.get("required")
        if isinstance(required, list):
            result["required"] = [name for name in required if name in properties]
    items = schema.get("items")
    if isinstance(items, dict):
        result["items"] = _convert(items, definitions, depth)
    elif isinstance(items, list):
        result["prefixItems"] = [_convert(item, definitions, depth) for item in items]
    if isinstance(schema.get("prefixItems"), list):
        result["prefixItems"] = [_convert(i, definitions, depth) for i in schema["prefixItems"]]
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        result["additionalProperties"] = extra
    elif isinstance(extra, dict):
        result["additionalProperties"] = _convert(extra, definitions, depth)


def _annotations(schema: Schema) -> Schema:
    return {key: schema[key] for key in ("title", "description") if key in schema}
