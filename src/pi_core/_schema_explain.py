"""Why arguments failed their schema: one line per failing field, in the words the model reads.

This runs only once a check has failed. It walks the schema beside the value and reports each
failing keyword where it failed (``missing``, ``unknown field``, ``expected number, got string``,
``expected one of ["a","b"]``, ``expected >= 5`` …). A node is entered only when its own
compiled check fails, so a valid branch costs one check. A failed ``type`` is the node's only
line. A union that nothing matches is explained by one branch: the one a tag property selects,
else the one declaring most of the object's keys, else the one whose first error is deepest.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeGuard

from ._schema_check import UNRESOLVED, Issue, js_number, passes_schema, resolve_ref

__all__ = ["explain"]

Path = tuple[str, ...]
_LISTED: Final = 20
"""An enum's message lists at most this many values."""


def explain(schema: Any, value: Any) -> list[Issue]:
    """The error lines of a value that failed ``schema``: at least one."""
    issues: list[tuple[Path, str]] = []
    _Explainer(schema).walk(schema, value, (), issues)
    if not issues:
        issues.append(((), "invalid"))
    return [(".".join(path), message) for path, message in issues]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=repr)


def _listed(values: list[Any]) -> str:
    if len(values) <= _LISTED:
        return _json(values)
    return f"{_json(values[:_LISTED])[:-1]}, ... and {len(values) - _LISTED} more]"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return js_number(value)
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _has_type(value: Any, name: Any) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if name == "integer":
        return isinstance(value, int) or value.is_integer()
    return bool(name == "number" and value == value and abs(value) != float("inf"))


def _bound(limit: Any) -> TypeGuard[float]:
    return isinstance(limit, (int, float)) and not isinstance(limit, bool)


def _multiple(value: float, factor: float) -> bool:
    if factor == 0:
        return False
    quotient = value / factor
    return bool(abs(quotient - round(quotient)) < 1e-9)


_BOUNDS: Final = (
    ("minimum", ">="),
    ("maximum", "<="),
    ("exclusiveMinimum", ">"),
    ("exclusiveMaximum", "<"),
)
_BOUND_HOLDS: Final[dict[str, Callable[[float, float], bool]]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}


class _Explainer:
    __slots__ = ("root",)

    def __init__(self, root: Any) -> None:
        self.root = root

    def ok(self, schema: Any, value: Any) -> bool:
        return passes_schema(schema, self.root, value) is not False

    def walk(self, node: Any, value: Any, path: Path, out: list[tuple[Path, str]]) -> None:
        if node is True or (not isinstance(node, Mapping) and node is not False):
            return
        if node is False:
            out.append((path, "no value is allowed here"))
            return
        if self.ok(node, value):
            return
        if UNRESOLVED in node:
            out.append((path, f"unresolved reference {node[UNRESOLVED]}"))
            return
        declared = node.get("type")
        if declared is not None:
            names = declared if isinstance(declared, list) else [declared]
            if not any(_has_type(value, name) for name in names):
                expected = " or ".join(str(name) for name in names)
                out.append((path, f"expected {expected}, got {_type_name(value)}"))
                return
        self._literals(node, value, path, out)
        if isinstance(value, str):
            self._string(node, value, path, out)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            self._number(node, value, path, out)
        elif isinstance(value, dict):
            self._object(node, value, path, out)
        elif isinstance(value, list):
            self._array(node, value, path, out)
        self._combinators(node, value, path, out)

    def _literals(
        self, node: Mapping[str, Any], value: Any, path: Path, out: list[tuple[Path, str]]
    ) -> None:
        members = node.get("enum")
        if isinstance(members, list) and not passes_schema({"enum": members}, None, value):
            out.append((path, f"expected one of {_listed(members)}"))
        if "const" in node and not passes_schema({"const": node["const"]}, None, value):
            out.append((path, f"expected {_json(node['const'])}"))

    def _string(
        self, node: Mapping[str, Any], value: str, path: Path, out: list[tuple[Path, str]]
    ) -> None:
        shortest, longest = node.get("minLength"), node.get("maxLength")
        if _bound(shortest) and len(value) < shortest:
            out.append((path, f"expected at least {shortest} characters"))
        if _bound(longest) and len(value) > longest:
            out.append((path, f"expected at most {longest} characters"))
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not re.search(pattern, value):
            out.append((path, f"expected to match {pattern}"))
        fmt = node.get("format")
        if isinstance(fmt, str) and not passes_schema({"format": fmt}, None, value):
            out.append((path, f"expected format {fmt}"))

    def _number(
        self, node: Mapping[str, Any], value: float, path: Path, out: list[tuple[Path, str]]
    ) -> None:
        for keyword, relation in _BOUNDS:
            limit = node.get(keyword)
            if _bound(limit) and not _BOUND_HOLDS[relation](value, limit):
                out.append((path, f"expected {relation} {js_number(limit)}"))
        factor = node.get("multipleOf")
        if _bound(factor) and not _multiple(value, factor):
            out.append((path, f"expected a multiple of {js_number(factor)}"))

    def _object(
        self,
        node: Mapping[str, Any],
        value: dict[str, Any],
        path: Path,
        out: list[tuple[Path, str]],
    ) -> None:
        properties = node.get("properties")
        if not isinstance(properties, Mapping):
            properties = {}
        required = node.get("required")
        for key in required if isinstance(required, list) else ():
            if isinstance(key, str) and key not in value:
                out.append(((*path, key), "missing"))
        for key, sub in properties.items():
            if key in value:
                self.walk(sub, value[key], (*path, key), out)
        patterns = node.get("patternProperties")
        patterns = list(patterns.items()) if isinstance(patterns, Mapping) else []
        extra = node.get("additionalProperties")
        names = node.get("propertyNames")
        for key, item in value.items():
            matched = key in properties
            for pattern, sub in patterns:
                if re.search(pattern, key):
                    matched = True
                    self.walk(sub, item, (*path, key), out)
            if not matched and extra is False:
                out.append(((*path, key), "unknown field"))
            elif not matched and extra is not None:
                self.walk(extra, item, (*path, key), out)
            if names is not None and not self.ok(names, key):
                out.append(((*path, key), "invalid property name"))
        fewest, most = node.get("minProperties"), node.get("maxProperties")
        if _bound(fewest) and len(value) < fewest:
            out.append((path, f"expected at least {fewest} properties"))
        if _bound(most) and len(value) > most:
            out.append((path, f"expected at most {most} properties"))
        self._dependencies(node, value, path, out)

    def _dependencies(
        self,
        node: Mapping[str, Any],
        value: dict[str, Any],
        path: Path,
        out: list[tuple[Path, str]],
    ) -> None:
        rules: dict[str, Any] = {}
        for keyword in ("dependentRequired", "dependencies"):
            found = node.get(keyword)
            if isinstance(found, Mapping):
                rules.update(found)
        for key, needed in rules.items():
            if key not in value:
                continue
            if isinstance(needed, list):
                for name in needed:
                    if name not in value:
                        out.append(((*path, str(name)), f"required when {key} is present"))
            else:
                self.walk(needed, value, path, out)

    def _array(
        self, node: Mapping[str, Any], value: list[Any], path: Path, out: list[tuple[Path, str]]
    ) -> None:
        items = node.get("items")
        if isinstance(items, list):
            prefix, rest = items, node.get("additionalItems")
        else:
            found = node.get("prefixItems")
            prefix, rest = (found if isinstance(found, list) else []), items
        for index, item in enumerate(value):
            sub = prefix[index] if index < len(prefix) else rest
            if sub is not None:
                self.walk(sub, item, (*path, str(index)), out)
        fewest, most = node.get("minItems"), node.get("maxItems")
        if _bound(fewest) and len(value) < fewest:
            out.append((path, f"expected at least {fewest} items"))
        if _bound(most) and len(value) > most:
            out.append((path, f"expected at most {most} items"))
        if node.get("uniqueItems") is True and not passes_schema(
            {"uniqueItems": True}, None, value
        ):
            out.append((path, "expected unique items"))
        if "contains" in node and not any(self.ok(node["contains"], item) for item in value):
            out.append((path, "expected at least 1 matching item"))

    def _combinators(
        self, node: Mapping[str, Any], value: Any, path: Path, out: list[tuple[Path, str]]
    ) -> None:
        parts = node.get("allOf")
        for part in parts if isinstance(parts, list) else ():
            self.walk(part, value, path, out)
        for keyword in ("anyOf", "oneOf"):
            branches = node.get(keyword)
            if isinstance(branches, list):
                self._union(branches, value, path, out, exactly_one=keyword == "oneOf")
        if "not" in node and self.ok(node["not"], value):
            out.append((path, "must not match the schema in not"))
        if "if" in node:
            branch = node.get("then") if self.ok(node["if"], value) else node.get("else")
            if branch is not None:
                self.walk(branch, value, path, out)
        ref = node.get("$ref")
        if isinstance(ref, str):
            self.walk(resolve_ref(ref, self.root), value, path, out)

    def _union(
        self,
        branches: list[Any],
        value: Any,
        path: Path,
        out: list[tuple[Path, str]],
        *,
        exactly_one: bool,
    ) -> None:
        matches = sum(1 for branch in branches if self.ok(branch, value))
        if matches == 1 or (matches > 1 and not exactly_one):
            return
        if matches > 1:
            out.append((path, "matches more than one alternative"))
            return
        tag = self._tag(branches)
        if tag is not None and isinstance(value, dict):
            key, values = tag
            chosen = next(
                (i for i, v in enumerate(values) if key in value and _strict_equal(v, value[key])),
                None,
            )
            if chosen is None:
                out.append(((*path, key), f"expected one of {_listed(values)}"))
            else:
                self.walk(branches[chosen], value, path, out)
            return
        best: tuple[int, int, list[tuple[Path, str]]] | None = None
        for branch in branches:
            errors: list[tuple[Path, str]] = []
            self.walk(branch, value, path, errors)
            if not errors:
                continue
            declared = self._declared_keys(branch, value) if isinstance(value, dict) else 0
            depth = len(".".join(errors[0][0]))
            if best is None or declared > best[0] or (declared == best[0] and depth > best[1]):
                best = (declared, depth, errors)
        out.extend(best[2] if best is not None else [(path, "matches no alternative")])

    def _resolved(self, branch: Any) -> Any:
        if isinstance(branch, Mapping) and isinstance(branch.get("$ref"), str):
            return resolve_ref(branch["$ref"], self.root)
        return branch

    def _declared_keys(self, branch: Any, value: dict[str, Any]) -> int:
        node = self._resolved(branch)
        properties = node.get("properties") if isinstance(node, Mapping) else None
        return sum(1 for key in value if isinstance(properties, Mapping) and key in properties)

    def _tag(self, branches: list[Any]) -> tuple[str, list[Any]] | None:
        """A property every branch fixes to its own primitive ``const``: the union's tag."""
        resolved = [self._resolved(branch) for branch in branches]
        first = resolved[0] if resolved else None
        if not isinstance(first, Mapping) or not isinstance(first.get("properties"), Mapping):
            return None
        for key in first["properties"]:
            values = [_tag_value(node, key) for node in resolved]
            if all(v is not _NOT_A_TAG for v in values) and len(set(map(_json, values))) == len(
                values
            ):
                return key, values
        return None


_NOT_A_TAG: Final = object()


def _tag_value(node: Any, key: str) -> Any:
    properties = node.get("properties") if isinstance(node, Mapping) else None
    sub = properties.get(key) if isinstance(properties, Mapping) else None
    if not isinstance(sub, Mapping) or "const" not in sub:
        return _NOT_A_TAG
    const = sub["const"]
    return _NOT_A_TAG if isinstance(const, (dict, list)) else const


def _strict_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b) and isinstance(a, str) == isinstance(b, str)
