"""Arguments the demo model makes up for a tool it knows only by its JSON Schema."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["sample_arguments"]

_QUOTED_EXAMPLE = re.compile(r"'([^'\s]{1,80})'")
"""A value a description quotes, as in ``IANA timezone name (e.g., 'America/New_York')``."""

_BY_TYPE: dict[str, Any] = {
    "string": "demo",
    "integer": 1,
    "number": 1,
    "boolean": False,
    "array": [],
    "object": {},
}


def sample_arguments(schema: Any) -> dict[str, Any]:
    """A value for each required property of an object ``schema``: its default, first enum
    value or first example, a value its description quotes, else a plain value of its type."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or () if isinstance(name, str)]
    return {name: _sample(properties.get(name) or {}) for name in required}


def _sample(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return "demo"
    if "default" in prop:
        return prop["default"]
    for key in ("enum", "examples"):
        if prop.get(key):
            return prop[key][0]
    kind = prop.get("type", "string")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "string":
        quoted = _QUOTED_EXAMPLE.search(str(prop.get("description", "")))
        return quoted.group(1) if quoted else "demo"
    return _BY_TYPE.get(kind, "demo")
