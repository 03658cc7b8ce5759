"""Tool schemas cut to the subset Gemini accepts, keeping their meaning where it can."""

from __future__ import annotations

import copy
from typing import Any, Literal

import attrs
from _request_rules import gemini_schema_problems as problems
from hypothesis import given
from hypothesis import strategies as st

from pi_core import tool
from pi_core.providers._gemini_schema import gemini_schema


def test_refs_are_inlined_and_definitions_dropped() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {"at": {"$ref": "#/$defs/Point", "description": "where"}, "path": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
    }  # fmt: skip
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "at": {"type": "object", "description": "where", "properties": {"x": {"type": "number"}}, "required": ["x"]},
            "path": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        },
    }  # fmt: skip


def test_recursive_refs_stop() -> None:
    schema = {
        "type": "object",
        "definitions": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}},
        "properties": {"head": {"$ref": "#/definitions/Node"}},
    }  # fmt: skip
    converted = gemini_schema(schema)
    assert problems(converted) == []
    depth, node = 0, converted["properties"]["head"]
    while "properties" in node:
        node, depth = node["properties"]["next"], depth + 1
    assert 3 <= depth <= 10


def test_unions_constants_bounds_and_unknown_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {
            "maybe": {"type": ["string", "null"], "description": "optional"},
            "pick": {"oneOf": [{"const": "a"}, {"const": 1}]},
            "count": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "number"}}}]},
            "not_this": {"not": {"type": "string"}, "type": "string"},
        },
        "required": ["maybe", "missing"],
        "additionalProperties": False,
        "examples": [{}],
    }  # fmt: skip
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "maybe": {"description": "optional", "anyOf": [{"type": "string"}, {"type": "null"}]},
            "pick": {"anyOf": [{"enum": ["a"]}, {"enum": [1]}]},
            "count": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
            "both": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}, "required": ["a"]},
            "not_this": {"type": "string"},
        },
        "required": ["maybe"],
        "additionalProperties": False,
    }  # fmt: skip


@attrs.frozen
class Place:
    city: str
    country: str | None = None


def test_a_decorated_tools_schema_is_accepted() -> None:
    @tool
    async def plan(
        places: list[Place], mode: Literal["walk", "drive"], days: int | None = None
    ) -> str:
        """Plan a trip."""
        return ""

    converted = gemini_schema(plan.parameters)
    assert problems(converted) == []
    assert set(converted["properties"]) == {"places", "mode", "days"}


_SCHEMA = st.recursive(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "number", ["integer", "null"]])},
        optional={"const": st.integers(), "$comment": st.text(max_size=3), "format": st.just("uri")},
    ),
    lambda inner: st.one_of(
        st.builds(lambda p, r: {"type": "object", "properties": p, "required": r},
                  st.dictionaries(st.sampled_from("abc"), inner, max_size=3), st.lists(st.sampled_from("abcd"), max_size=3)),
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda m: {"anyOf": m}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda m: {"allOf": m}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda t: {"$defs": {"T": t}, "$ref": "#/$defs/T"}, inner),
    ),
    max_leaves=8,
)  # fmt: skip


@given(_SCHEMA)
def test_any_schema_comes_out_acceptable_and_the_input_untouched(schema: dict[str, Any]) -> None:
    before = copy.deepcopy(schema)
    assert problems(gemini_schema({"type": "object", "properties": {"x": schema}})) == []
    assert schema == before
