"""validate_tool_arguments: the three coercion passes, one error line per failing field, the
frame, non-mutation and caching. (Every case agrees with pi-schema 1.6.0; the recorded table and
a differential run against it are in test_validation_upstream.py.)"""

from __future__ import annotations

import copy
import json
import types
import uuid
from typing import Any

import fastjsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_core import PiCoreError, Tool, ToolArgumentsError, ToolCall
from pi_core._validation import validate_tool_arguments

Schema = dict[str, Any]


def make_tool(schema: Schema, name: str = "t") -> Tool:
    return Tool(name=name, description="", parameters=schema)


def call(args: Any, name: str = "t") -> ToolCall:
    return ToolCall(id="call-1", name=name, arguments=args)


def validate(schema: Schema, args: Any) -> Any:
    return validate_tool_arguments(make_tool(schema), call(args))


def value_schema(schema: Any) -> Schema:
    """Upstream's test shape: ``{value: <schema>}``, required."""
    return {"type": "object", "properties": {"value": schema}, "required": ["value"]}


def coerce_value(schema: Any, value: Any) -> Any:
    return validate(value_schema(schema), {"value": value})["value"]


def error_lines(schema: Schema, args: Any) -> list[str]:
    with pytest.raises(ToolArgumentsError) as info:
        validate(schema, args)
    text = str(info.value)
    head, _, _ = text.partition("\n\nReceived arguments:\n")
    return head.splitlines()[1:]


def same(actual: Any, expected: Any) -> bool:
    """Equal *and* of the same type (``1 == True == 1.0`` in Python)."""
    return bool(actual == expected and type(actual) is type(expected))


# --- coercion: the primitive rules ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("007", 7),
        ("2.5", 2.5),
        ("42.0", 42.0),  # a float: it was written with a fraction
        ("1e3", 1000.0),
        ("-1.5E-2", -0.015),
        (".5", 0.5),
        (" 12 ", 12),
        ("0x10", 16),
        ("12n", 12),
        ("", 0),
        ("   ", 0),
        ("TRUE", 1),
        ("false", 0),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        (True, 1),
        (False, 0),
        (None, 0),
        (3, 3),
        (2.5, 2.5),
    ],
)
def test_number_coercion(given_value: Any, expected: Any) -> None:
    assert same(coerce_value({"type": "number"}, given_value), expected)


@pytest.mark.parametrize(
    "given_value", ["Infinity", "-Infinity", "NaN", "abc", "1e400", "1_000", "12abc", "1,5"]
)
def test_number_leaves_non_finite_and_other_strings(given_value: str) -> None:
    assert error_lines(value_schema({"type": "number"}), {"value": given_value}) == [
        "  - value: expected number, got string"
    ]


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("4.0", 4),
        ("1e3", 1000),
        ("42.1", 42),  # truncated
        ("2.5e-1", 0),
        (2.5, 2),
        (-2.5, -2),
        ("", 0),
        ("true", 1),
        (None, 0),
        (True, 1),
        (False, 0),
        (4.0, 4),
        (5, 5),
    ],
)
def test_integer_coercion_truncates(given_value: Any, expected: int) -> None:
    assert same(coerce_value({"type": "integer"}, given_value), expected)


def test_integer_leaves_other_strings() -> None:
    assert error_lines(value_schema({"type": "integer"}), {"value": "x"}) == [
        "  - value: expected integer, got string"
    ]


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [
        ("true", True),
        ("false", False),
        ("TRUE", True),
        ("False", False),
        ("1", True),
        ("0", False),
        (1, True),
        (0, False),
        (1.0, True),
        (None, False),
    ],
)
def test_boolean_coercion(given_value: Any, expected: bool) -> None:
    assert same(coerce_value({"type": "boolean"}, given_value), expected)


@pytest.mark.parametrize(
    ("given_value", "kind"), [("yes", "string"), ("t", "string"), (2, "integer"), (-1, "integer")]
)
def test_boolean_rejects_everything_else(given_value: Any, kind: str) -> None:
    assert error_lines(value_schema({"type": "boolean"}), {"value": given_value}) == [
        f"  - value: expected boolean, got {kind}"
    ]


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [
        (None, "null"),  # a required string: null is spelled out
        (True, "true"),
        (False, "false"),
        (42, "42"),
        (1.5, "1.5"),
        (2.0, "2"),  # as JavaScript's String(2) prints it
        (-0.0, "0"),
        (1e-7, "1e-7"),
        (0.00001, "0.00001"),
        (1e21, "1e+21"),
        ("kept", "kept"),
    ],
)
def test_string_coercion(given_value: Any, expected: str) -> None:
    assert same(coerce_value({"type": "string"}, given_value), expected)


@pytest.mark.parametrize(("given_value", "kind"), [({"x": 1}, "object"), ([1, 2], "array")])
def test_string_leaves_containers(given_value: Any, kind: str) -> None:
    assert error_lines(value_schema({"type": "string"}), {"value": given_value}) == [
        f"  - value: expected string, got {kind}"
    ]


@pytest.mark.parametrize("given_value", ["", 0, 0.0, False, None, "null", "NULL", "undefined", "0"])
def test_null_coercion(given_value: Any) -> None:
    assert coerce_value({"type": "null"}, given_value) is None


@pytest.mark.parametrize(
    ("given_value", "kind"),
    [(1, "integer"), (True, "boolean"), ([], "array"), ("x", "string")],
)
def test_null_rejects_everything_else(given_value: Any, kind: str) -> None:
    assert error_lines(value_schema({"type": "null"}), {"value": given_value}) == [
        f"  - value: expected null, got {kind}"
    ]


# --- coercion: optional nulls, literals, type lists, combinators, objects, arrays -----------------


def test_an_optional_null_is_dropped_so_the_default_applies() -> None:
    schema = {"type": "object", "properties": {"value": {"type": "integer", "default": 3}}}
    assert validate(schema, {"value": None}) == {}


def test_an_optional_null_the_schema_accepts_stays() -> None:
    schema = {"type": "object", "properties": {"value": {"type": ["integer", "null"]}}}
    assert validate(schema, {"value": None}) == {"value": None}


def test_optional_nulls_are_dropped_in_nested_objects_and_items() -> None:
    inner = {"type": "object", "properties": {"n": {"type": "integer"}}}
    schema = {
        "type": "object",
        "properties": {"o": inner, "list": {"type": "array", "items": inner}},
    }
    assert validate(schema, {"o": {"n": None}, "list": [{"n": None}, {"n": "2"}]}) == {
        "o": {},
        "list": [{}, {"n": 2}],
    }


@pytest.mark.parametrize(
    ("schema", "given_value", "expected"),
    [
        ({"enum": ["1", "2"]}, 1, "1"),
        ({"enum": [1, 2, "x"]}, "2", 2),
        ({"enum": [True, False]}, "TRUE", True),
        ({"const": 3}, "3", 3),
        ({"const": "x"}, "x", "x"),
    ],
)
def test_literals_take_the_member_the_value_converts_to(
    schema: Schema, given_value: Any, expected: Any
) -> None:
    assert same(coerce_value(schema, given_value), expected)


@pytest.mark.parametrize(
    ("type_", "given_value", "expected"),
    [
        (["number", "string"], "1", "1"),  # already a string: nothing happens
        (["boolean", "number"], "1", 1),  # "1" is no boolean in this pass, but a number
        (["integer", "boolean"], "true", True),
        (["integer", "null"], "", None),
        (["integer", "null"], "5", 5),
        (["null", "integer"], 0, 0),  # 0 already is an integer
        (["string", "number"], 5, 5),
        (["integer", "string"], 4.0, 4),  # the integer 4, as JavaScript has it
        (["object", "string"], 7, "7"),
        (["array", "null"], "", None),
    ],
)
def test_type_lists(type_: list[str], given_value: Any, expected: Any) -> None:
    assert same(coerce_value({"type": type_}, given_value), expected)


def test_all_of_coerces_through_each_part() -> None:
    schema = {"allOf": [{"type": "integer"}, {"minimum": 1}]}
    assert same(coerce_value(schema, "5"), 5)
    assert error_lines(value_schema(schema), {"value": "0"}) == ["  - value: expected >= 1"]


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
def test_unions_take_the_first_branch_conversion_they_accept(keyword: str) -> None:
    schema = {keyword: [{"type": "integer"}, {"type": "boolean"}]}
    assert same(coerce_value(schema, "7"), 7)
    assert same(coerce_value(schema, "true"), 1)  # the integer branch converts it first
    assert same(coerce_value(schema, True), True)  # a branch accepts it: it stays


def test_a_union_that_nothing_matches_is_explained_by_one_branch() -> None:
    schema = value_schema({"anyOf": [{"type": "integer"}, {"type": "boolean"}]})
    assert error_lines(schema, {"value": "x"}) == ["  - value: expected integer, got string"]


OBJECTS_UNION: Schema = {
    "anyOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]},
    ]
}


def test_a_union_of_objects_coerces_the_whole_object() -> None:
    assert validate(OBJECTS_UNION, {"b": "true"}) == {"b": True}
    assert same(validate(OBJECTS_UNION, {"a": "3"})["a"], 3)


def test_a_failed_union_of_objects_blames_the_branch_declaring_the_keys() -> None:
    assert error_lines(OBJECTS_UNION, {"a": "x"}) == ["  - a: expected integer, got string"]
    assert error_lines(OBJECTS_UNION, {"c": 1}) == ["  - a: missing"]


TAGGED: Schema = value_schema(
    {
        "oneOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
                "required": ["kind", "r"],
            },
            {
                "type": "object",
                "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                "required": ["kind", "side"],
            },
        ]
    }
)


def test_a_tagged_union_is_explained_by_the_branch_its_tag_selects() -> None:
    assert error_lines(TAGGED, {"value": {"kind": "square", "side": "x"}}) == [
        "  - value.side: expected number, got string"
    ]
    assert error_lines(TAGGED, {"value": {"kind": "tri"}}) == [
        '  - value.kind: expected one of ["circle","square"]'
    ]
    assert validate(TAGGED, {"value": {"kind": "circle", "r": "2"}}) == {
        "value": {"kind": "circle", "r": 2}
    }


def test_union_branches_resolve_refs_of_the_root() -> None:
    schema = {
        "type": "object",
        "$defs": {"N": {"type": "integer"}},
        "properties": {"v": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "boolean"}]}},
    }
    assert same(validate(schema, {"v": "4"})["v"], 4)


def test_object_properties_are_coerced_recursively() -> None:
    schema = {
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "properties": {"n": {"type": "number"}, "flag": {"type": "boolean"}},
            }
        },
    }
    assert validate(schema, {"outer": {"n": "3", "flag": "false", "other": "1"}}) == {
        "outer": {"n": 3, "flag": False, "other": "1"}
    }


def test_additional_and_pattern_properties_coerce_the_other_keys() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^n_": {"type": "number"}},
        "additionalProperties": {"type": "integer"},
    }
    result = validate(schema, {"name": 5, "n_x": "2.5", "a": "1"})
    assert result == {"name": "5", "n_x": 2.5, "a": 1}


def test_extra_keys_are_allowed_and_kept_by_default() -> None:
    schema = value_schema({"type": "integer"})
    assert validate(schema, {"value": "1", "extra": "2"}) == {"value": 1, "extra": "2"}


def test_properties_without_a_type_are_coerced_too() -> None:
    assert validate({"properties": {"n": {"type": "string"}}}, {"n": 5}) == {"n": "5"}


def test_array_items_schema_applies_to_each_element() -> None:
    schema = value_schema({"type": "array", "items": {"type": "integer"}})
    assert validate(schema, {"value": ["1", 2, "3"]}) == {"value": [1, 2, 3]}


@pytest.mark.parametrize("keyword", ["items", "prefixItems"])
def test_tuples_apply_positionally(keyword: str) -> None:
    schema = value_schema({"type": "array", keyword: [{"type": "integer"}, {"type": "string"}]})
    assert validate(schema, {"value": ["1", 2, "3"]}) == {"value": [1, "2", "3"]}


@pytest.mark.parametrize(
    ("items", "given_value", "expected"),
    [
        ({"type": "integer"}, "1", [1]),
        ({"type": "integer"}, None, [0]),
        ({"type": "array", "items": {"type": "string"}}, "x", [["x"]]),
        (None, {"a": 1}, [{"a": 1}]),
    ],
)
def test_a_single_value_is_wrapped_into_a_list(
    items: Schema | None, given_value: Any, expected: list[Any]
) -> None:
    schema: Schema = {"type": "array"} if items is None else {"type": "array", "items": items}
    assert coerce_value(schema, given_value) == expected


def test_a_tuple_never_wraps() -> None:
    schema = value_schema({"type": "array", "items": [{"type": "integer"}]})
    assert error_lines(schema, {"value": "1"}) == ["  - value: expected array, got string"]


def test_a_schema_without_rules_copies_the_arguments() -> None:
    args = {"a": [1, {"b": 2}]}
    result = validate({}, args)
    assert result == args
    assert result["a"] is not args["a"]


# --- the error text ---------------------------------------------------------------------------


def test_full_error_text_matches_upstream() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate(value_schema({"type": "string"}), {"value": {"x": 1}})
    assert str(info.value) == (
        'Validation failed for tool "t":\n'
        "  - value: expected string, got object\n"
        "\n"
        "Received arguments:\n"
        "{\n"
        '  "value": {\n'
        '    "x": 1\n'
        "  }\n"
        "}"
    )


def test_error_text_for_empty_arguments() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate(value_schema({"type": "string"}), {})
    assert str(info.value) == (
        'Validation failed for tool "t":\n  - value: missing\n\nReceived arguments:\n{}'
    )


def test_error_text_prints_the_arguments_before_coercion() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
    }
    args = {"n": "5", "s": {"deep": True}}
    with pytest.raises(ToolArgumentsError) as info:
        validate(schema, args)
    assert str(info.value).endswith("Received arguments:\n" + json.dumps(args, indent=2))


def test_error_header_names_the_tool_call() -> None:
    tool = make_tool(value_schema({"type": "string"}), name="registered")
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(tool, call({}, name="as-called"))
    assert str(info.value).startswith('Validation failed for tool "as-called":\n')


def test_error_text_keeps_non_ascii_text() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate(value_schema({"type": "integer"}), {"value": "drei", "ü": "ß"})
    assert '"ü": "ß"' in str(info.value)


def test_tool_arguments_error_is_a_value_error_and_a_pi_core_error() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate(value_schema({"type": "string"}), {})
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, PiCoreError)


WORDINGS = [
    pytest.param({"type": "object"}, "x", "value: expected object, got string", id="object"),
    pytest.param(
        {"type": ["array", "object"]},
        "x",
        "value: expected array or object, got string",
        id="types",
    ),
    pytest.param({"minimum": 5}, 4, "value: expected >= 5", id="minimum"),
    pytest.param({"maximum": 5}, 6, "value: expected <= 5", id="maximum"),
    pytest.param({"exclusiveMinimum": 5}, 5, "value: expected > 5", id="exclusiveMinimum"),
    pytest.param({"exclusiveMaximum": 5}, 5, "value: expected < 5", id="exclusiveMaximum"),
    pytest.param({"minimum": 0.5}, 0, "value: expected >= 0.5", id="fractional-limit"),
    pytest.param({"multipleOf": 3}, 4, "value: expected a multiple of 3", id="multipleOf"),
    pytest.param({"minLength": 3}, "ab", "value: expected at least 3 characters", id="minLength"),
    pytest.param({"maxLength": 2}, "abc", "value: expected at most 2 characters", id="maxLength"),
    pytest.param({"pattern": "^a+$"}, "b", "value: expected to match ^a+$", id="pattern"),
    pytest.param(
        {"type": "string", "format": "email"}, "nope", "value: expected format email", id="email"
    ),
    pytest.param(
        {"type": "string", "format": "date-time"},
        "2024-01-01",
        "value: expected format date-time",
        id="date-time",
    ),
    pytest.param(
        {"type": "string", "format": "uuid"}, "nope", "value: expected format uuid", id="uuid"
    ),
    pytest.param({"enum": ["a", "b"]}, "c", 'value: expected one of ["a","b"]', id="enum"),
    pytest.param(
        {"enum": list(range(25))},
        "x",
        "value: expected one of [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19, ... and 5 more]",
        id="long-enum",
    ),
    pytest.param({"const": "a"}, "b", 'value: expected "a"', id="const"),
    pytest.param({"minItems": 2}, [1], "value: expected at least 2 items", id="minItems"),
    pytest.param({"maxItems": 1}, [1, 2], "value: expected at most 1 items", id="maxItems"),
    pytest.param({"uniqueItems": True}, [1, 1], "value: expected unique items", id="uniqueItems"),
    pytest.param(
        {"items": [{}], "additionalItems": False},
        [1, 2],
        "value.1: no value is allowed here",
        id="additionalItems",
    ),
    pytest.param(
        {"contains": {"type": "string"}},
        [1],
        "value: expected at least 1 matching item",
        id="contains",
    ),
    pytest.param({"minProperties": 1}, {}, "value: expected at least 1 properties", id="minProps"),
    pytest.param(
        {"maxProperties": 1},
        {"a": 1, "b": 2},
        "value: expected at most 1 properties",
        id="maxProps",
    ),
    pytest.param(
        {"not": {"type": "string"}}, "x", "value: must not match the schema in not", id="not"
    ),
    pytest.param(False, 1, "value: no value is allowed here", id="false-schema"),
]


@pytest.mark.parametrize(("schema", "given_value", "line"), WORDINGS)
def test_upstream_wording(schema: Any, given_value: Any, line: str) -> None:
    assert error_lines(value_schema(schema), {"value": given_value}) == [f"  - {line}"]


def test_every_missing_property_has_its_own_line() -> None:
    names = ["a", "n", "i", "b", "arr"]
    schema = {"type": "object", "properties": {n: {} for n in names}, "required": names}
    assert error_lines(schema, {"i": 1}) == [
        "  - a: missing",
        "  - n: missing",
        "  - b: missing",
        "  - arr: missing",
    ]


def test_every_failing_field_has_its_own_line() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "n": {"type": "number"}, "e": {"enum": [1]}},
        "required": ["a", "n", "e"],
        "additionalProperties": False,
    }
    assert error_lines(schema, {"a": [], "n": "x", "zz": 1}) == [
        "  - e: missing",
        "  - a: expected string, got array",
        "  - n: expected number, got string",
        "  - zz: unknown field",
    ]


def test_required_in_a_nested_object_uses_the_dotted_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {"b": {"type": "object", "required": ["c"]}},
            }
        },
    }
    assert error_lines(schema, {"a": {"b": {}}}) == ["  - a.b.c: missing"]


def test_array_indices_are_path_segments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"x": {"type": "string"}}},
            }
        },
    }
    assert error_lines(schema, {"items": [{"x": "ok"}, {"x": {}}]}) == [
        "  - items.1.x: expected string, got object"
    ]


def test_paths_through_refs() -> None:
    schema = {
        "type": "object",
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "properties": {"p": {"$ref": "#/$defs/P"}},
    }
    assert error_lines(schema, {"p": {"x": "a"}}) == ["  - p.x: expected integer, got string"]


def test_additional_properties_false_in_a_nested_object() -> None:
    inner = {"type": "object", "properties": {"k": {}}, "additionalProperties": False}
    schema = {"type": "object", "properties": {"o": inner}}
    assert error_lines(schema, {"o": {"k": 1, "x": 2, "y": 3}}) == [
        "  - o.x: unknown field",
        "  - o.y: unknown field",
    ]


def test_one_of_wording() -> None:
    schema = value_schema({"oneOf": [{"type": "integer"}, {"type": "number"}]})
    assert error_lines(schema, {"value": 1}) == ["  - value: matches more than one alternative"]
    assert error_lines(schema, {"value": "x"}) == ["  - value: expected integer, got string"]


def test_property_names_and_dependencies_wording() -> None:
    names = {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}
    assert error_lines(names, {"ok": 1, "B": 2, "C": 3}) == [
        "  - B: invalid property name",
        "  - C: invalid property name",
    ]
    dependencies = {"type": "object", "dependencies": {"a": ["b", "c"]}}
    assert error_lines(dependencies, {"a": 1, "b": 2}) == ["  - c: required when a is present"]


@pytest.mark.parametrize(
    ("args", "kind"), [([1, 2], "array"), ("text", "string"), (None, "null"), (3, "integer")]
)
def test_non_object_arguments(args: Any, kind: str) -> None:
    assert error_lines({"type": "object", "properties": {}}, args) == [
        f"  - root: expected object, got {kind}"
    ]


def test_invalid_schema_is_reported_as_tool_arguments_error() -> None:
    with pytest.raises(ToolArgumentsError, match='Invalid parameters schema for tool "t"'):
        validate({"type": "no-such-type"}, {})


@pytest.mark.parametrize("ref", ["#/$defs/missing", "https://example.invalid/s.json"])
def test_a_reference_to_nothing_rejects_only_the_values_at_its_place(ref: str) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": ref}, "b": {"type": "integer"}}}
    assert validate(schema, {"b": "1"}) == {"b": 1}
    assert error_lines(schema, {"a": 1}) == [f"  - a: unresolved reference {ref}"]


# --- a call whose arguments could not be read ------------------------------------------------------


def test_arguments_error_is_refused_before_validation() -> None:
    broken = ToolCall(
        id="call-1",
        name="t",
        arguments={},
        arguments_error='Unexpected end of JSON input in: {"v":',
    )
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(make_tool({"type": "object", "properties": {}}), broken)
    assert str(info.value) == (
        'Invalid arguments for tool "t": Unexpected end of JSON input in: {"v":'
    )


# --- never mutate, never alias ---------------------------------------------------------------------

NESTED_SCHEMA: Schema = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "list": {"type": "array", "items": {"type": "number"}},
        "obj": {"type": "object", "properties": {"flag": {"type": "boolean"}}},
        "any": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    },
    "additionalProperties": {"type": "string"},
}


def test_the_callers_arguments_are_never_mutated() -> None:
    args: dict[str, Any] = {
        "n": "1",
        "list": ["2", 3],
        "obj": {"flag": "true", "x": [1]},
        "any": "4",
        "e": 5,
    }
    before = copy.deepcopy(args)
    result = validate(NESTED_SCHEMA, args)
    assert args == before
    assert result == {
        "n": 1,
        "list": [2, 3],
        "obj": {"flag": True, "x": [1]},
        "any": "4",  # the string branch accepts it as it is
        "e": "5",
    }
    assert result is not args
    assert result["list"] is not args["list"]
    assert result["obj"]["x"] is not args["obj"]["x"]


def test_valid_arguments_come_back_as_a_fresh_copy() -> None:
    args: dict[str, Any] = {"n": 1, "obj": {"flag": True, "deep": {"k": [1]}}}
    result = validate(NESTED_SCHEMA, args)
    assert result == args
    assert result is not args
    assert result["obj"]["deep"] is not args["obj"]["deep"]


def test_failed_validation_does_not_mutate() -> None:
    args = {"n": "x", "obj": {"flag": "true"}}
    before = copy.deepcopy(args)
    with pytest.raises(ToolArgumentsError):
        validate(NESTED_SCHEMA, args)
    assert args == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.sampled_from(["n", "list", "obj", "any", "x"]), json_values))
def test_never_mutates_any_json_input(args: dict[str, Any]) -> None:
    before = copy.deepcopy(args)
    try:
        result = validate(NESTED_SCHEMA, args)
    except ToolArgumentsError:
        pass
    else:
        assert result is not args
    assert args == before


# --- the compile cache -----------------------------------------------------------------------------


@pytest.fixture
def compile_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = fastjsonschema.compile

    def counting(definition: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(definition)
        return real(definition, *args, **kwargs)

    monkeypatch.setattr(fastjsonschema, "compile", counting)
    return calls


def fresh_schema() -> Schema:
    # A unique comment makes the schema new to every cache of the process.
    return {**value_schema({"type": "integer"}), "$comment": uuid.uuid4().hex}


def test_a_schema_is_compiled_once(compile_calls: list[Any]) -> None:
    tool = make_tool(fresh_schema())
    for _ in range(5):
        validate_tool_arguments(tool, call({"value": "1"}))
    with pytest.raises(ToolArgumentsError):
        validate_tool_arguments(tool, call({"value": "x"}))
    assert len(compile_calls) == 1


def test_equal_schemas_share_one_compilation(compile_calls: list[Any]) -> None:
    schema = fresh_schema()
    validate_tool_arguments(make_tool(schema), call({"value": 1}))
    validate_tool_arguments(make_tool(copy.deepcopy(schema)), call({"value": 2}))
    assert len(compile_calls) == 1
    validate_tool_arguments(make_tool(fresh_schema()), call({"value": 3}))
    assert len(compile_calls) == 2


def test_alternatives_are_compiled_once_too(compile_calls: list[Any]) -> None:
    schema = {
        **value_schema({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}),
        "$comment": uuid.uuid4().hex,
    }
    tool = make_tool(schema)
    validate_tool_arguments(tool, call({"value": "1"}))
    first = len(compile_calls)
    for value in ("2", "true", "x"):
        try:
            validate_tool_arguments(tool, call({"value": value}))
        except ToolArgumentsError:
            pass
    assert len(compile_calls) == first


def test_any_object_with_name_and_parameters_is_a_tool() -> None:
    tool = types.SimpleNamespace(name="ns", parameters=value_schema({"type": "integer"}))
    assert validate_tool_arguments(tool, call({"value": "3"})) == {"value": 3}
