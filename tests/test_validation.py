"""validate_tool_arguments: upstream's coercion rules, its error text, non-mutation and caching."""

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


# --- coercion: upstream's example table -----------------------------------------------------------

UPSTREAM_TABLE = [
    ("number", "42", 42),
    ("number", True, 1),
    ("number", None, 0),
    ("integer", "42", 42),
    ("boolean", "true", True),
    ("boolean", "false", False),
    ("boolean", 1, True),
    ("boolean", 0, False),
    ("string", None, ""),
    ("string", True, "true"),
    ("null", "", None),
    ("null", 0, None),
    ("null", False, None),
    (["number", "string"], "1", "1"),
    (["boolean", "number"], "1", 1),
]


@pytest.mark.parametrize(("type_", "given_value", "expected"), UPSTREAM_TABLE)
def test_upstream_example_table(type_: Any, given_value: Any, expected: Any) -> None:
    assert same(coerce_value({"type": type_}, given_value), expected)


@pytest.mark.parametrize(
    ("type_", "given_value", "message"),
    [
        ("boolean", "1", "must be boolean"),
        ("boolean", "0", "must be boolean"),
        ("null", "null", "must be null"),
        ("integer", "42.1", "must be integer"),
    ],
)
def test_upstream_failing_cases(type_: str, given_value: Any, message: str) -> None:
    assert error_lines(value_schema({"type": type_}), {"value": given_value}) == [
        f"  - value: {message}"
    ]


# --- coercion: every primitive rule ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("007", 7),
        ("2.5", 2.5),
        ("42.0", 42.0),
        ("1e3", 1000.0),
        ("-1.5E-2", -0.015),
        (".5", 0.5),
        (" 12 ", 12),
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


@pytest.mark.parametrize("given_value", ["", "   ", "Infinity", "-Infinity", "NaN", "abc", "1e400"])
def test_number_leaves_non_finite_and_blank_strings(given_value: str) -> None:
    assert error_lines(value_schema({"type": "number"}), {"value": given_value}) == [
        "  - value: must be number"
    ]


@pytest.mark.parametrize("given_value", ["0x10", "1_000", "12abc", "1,5"])
def test_number_reads_decimal_notation_only(given_value: str) -> None:
    assert error_lines(value_schema({"type": "number"}), {"value": given_value}) == [
        "  - value: must be number"
    ]


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("4.0", 4),
        ("1e3", 1000),
        (None, 0),
        (True, 1),
        (False, 0),
        (4.0, 4),
        (5, 5),
    ],
)
def test_integer_coercion(given_value: Any, expected: int) -> None:
    assert same(coerce_value({"type": "integer"}, given_value), expected)


@pytest.mark.parametrize("given_value", ["42.1", "2.5e-1", 2.5, "", "x"])
def test_integer_rejects_fractions(given_value: Any) -> None:
    assert error_lines(value_schema({"type": "integer"}), {"value": given_value}) == [
        "  - value: must be integer"
    ]


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [("true", True), ("false", False), (1, True), (0, False), (1.0, True), (None, False)],
)
def test_boolean_coercion(given_value: Any, expected: bool) -> None:
    assert same(coerce_value({"type": "boolean"}, given_value), expected)


@pytest.mark.parametrize("given_value", ["1", "0", "TRUE", "yes", 2, -1])
def test_boolean_rejects_everything_else(given_value: Any) -> None:
    assert error_lines(value_schema({"type": "boolean"}), {"value": given_value}) == [
        "  - value: must be boolean"
    ]


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [
        (None, ""),
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


@pytest.mark.parametrize("given_value", [{"x": 1}, [1, 2]])
def test_string_leaves_containers(given_value: Any) -> None:
    assert error_lines(value_schema({"type": "string"}), {"value": given_value}) == [
        "  - value: must be string"
    ]


@pytest.mark.parametrize("given_value", ["", 0, 0.0, False, None])
def test_null_coercion(given_value: Any) -> None:
    assert coerce_value({"type": "null"}, given_value) is None


@pytest.mark.parametrize("given_value", ["null", "0", 1, True, []])
def test_null_rejects_everything_else(given_value: Any) -> None:
    assert error_lines(value_schema({"type": "null"}), {"value": given_value}) == [
        "  - value: must be null"
    ]


# --- coercion: type lists, combinators, objects, arrays --------------------------------------------


@pytest.mark.parametrize(
    ("type_", "given_value", "expected"),
    [
        (["number", "string"], "1", "1"),  # already a string: nothing happens
        (["boolean", "number"], "1", 1),  # boolean leaves "1", number takes it
        (["integer", "boolean"], "true", True),
        (["integer", "null"], "", None),
        (["integer", "null"], "5", 5),
        (["null", "integer"], 0, 0),  # 0 already is an integer
        (["string", "number"], 5, 5),
        (["integer", "string"], 4.0, 4.0),  # matches integer already, so it stays as it is
        (["object", "string"], 7, "7"),
        (["array", "null"], "", None),
    ],
)
def test_type_lists(type_: list[str], given_value: Any, expected: Any) -> None:
    assert same(coerce_value({"type": type_}, given_value), expected)


def test_all_of_coerces_through_each_part() -> None:
    schema = {"allOf": [{"type": "integer"}, {"minimum": 1}]}
    assert same(coerce_value(schema, "5"), 5)
    assert error_lines(value_schema(schema), {"value": "0"}) == ["  - value: must be >= 1"]


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
def test_any_of_and_one_of_take_the_first_alternative_that_validates(keyword: str) -> None:
    schema = {keyword: [{"type": "integer"}, {"type": "boolean"}]}
    assert same(coerce_value(schema, "7"), 7)
    assert same(coerce_value(schema, "true"), True)
    assert same(coerce_value(schema, 1), 1)


def test_any_of_leaves_the_value_when_no_alternative_validates() -> None:
    schema = value_schema({"anyOf": [{"type": "integer"}, {"type": "boolean"}]})
    assert error_lines(schema, {"value": "x"}) == [
        "  - value: must be integer",
        "  - value: must be boolean",
        "  - value: must match a schema in anyOf",
    ]


def test_any_of_at_the_top_level_coerces_the_whole_object() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]},
        ]
    }
    assert validate(schema, {"b": "true"}) == {"b": True}
    assert same(validate(schema, {"a": "3"})["a"], 3)


def test_any_of_alternatives_resolve_refs_of_the_root() -> None:
    schema = {
        "type": "object",
        "$defs": {"N": {"type": "integer"}},
        "properties": {"v": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "integer"}]}},
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


def test_additional_properties_schema_coerces_the_other_keys() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "additionalProperties": {"type": "integer"},
    }
    result = validate(schema, {"name": 5, "a": "1", "b": "2"})
    assert result == {"name": "5", "a": 1, "b": 2}


def test_extra_keys_are_allowed_and_kept_by_default() -> None:
    schema = value_schema({"type": "integer"})
    assert validate(schema, {"value": "1", "extra": "2"}) == {"value": 1, "extra": "2"}


def test_properties_without_an_object_type_are_not_coerced() -> None:
    # Upstream's object rule applies only where "type" includes "object".
    schema = {"properties": {"n": {"type": "string"}}}
    assert error_lines(schema, {"n": 5}) == ["  - n: must be string"]


def test_array_items_schema_applies_to_each_element() -> None:
    schema = value_schema({"type": "array", "items": {"type": "integer"}})
    assert validate(schema, {"value": ["1", 2, "3"]}) == {"value": [1, 2, 3]}


def test_array_items_list_applies_positionally() -> None:
    schema = value_schema({"type": "array", "items": [{"type": "integer"}, {"type": "string"}]})
    result = validate(schema, {"value": ["1", 2, "3"]})
    assert result == {"value": [1, "2", "3"]}


def test_nested_arrays_of_objects() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"x": {"type": "integer"}}},
            }
        },
    }
    assert validate(schema, {"items": [{"x": "1"}, {"x": 2}]}) == {"items": [{"x": 1}, {"x": 2}]}


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
        "  - value: must be string\n"
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
        'Validation failed for tool "t":\n'
        "  - value: must have required properties value\n"
        "\n"
        "Received arguments:\n"
        "{}"
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
    pytest.param({"type": "string"}, [1], "  - value: must be string", id="string"),
    pytest.param({"type": "number"}, "x", "  - value: must be number", id="number"),
    pytest.param({"type": "integer"}, 1.5, "  - value: must be integer", id="integer"),
    pytest.param({"type": "boolean"}, "x", "  - value: must be boolean", id="boolean"),
    pytest.param({"type": "null"}, "x", "  - value: must be null", id="null"),
    pytest.param({"type": "object"}, "x", "  - value: must be object", id="object"),
    pytest.param({"type": "array"}, "x", "  - value: must be array", id="array"),
    pytest.param(
        {"type": ["array", "object"]}, "x", "  - value: must be either array or object", id="types"
    ),
    pytest.param({"minimum": 5}, 4, "  - value: must be >= 5", id="minimum"),
    pytest.param({"maximum": 5}, 6, "  - value: must be <= 5", id="maximum"),
    pytest.param({"exclusiveMinimum": 5}, 5, "  - value: must be > 5", id="exclusiveMinimum"),
    pytest.param({"exclusiveMaximum": 5}, 5, "  - value: must be < 5", id="exclusiveMaximum"),
    pytest.param({"minimum": 0.5}, 0, "  - value: must be >= 0.5", id="fractional-limit"),
    pytest.param({"multipleOf": 3}, 4, "  - value: must be multiple of 3", id="multipleOf"),
    pytest.param(
        {"minLength": 3}, "ab", "  - value: must not have fewer than 3 characters", id="minLength"
    ),
    pytest.param(
        {"maxLength": 2}, "abc", "  - value: must not have more than 2 characters", id="maxLength"
    ),
    pytest.param({"pattern": "^a+$"}, "b", '  - value: must match pattern "^a+$"', id="pattern"),
    pytest.param(
        {"type": "string", "format": "email"},
        "nope",
        '  - value: must match format "email"',
        id="format",
    ),
    pytest.param(
        {"enum": ["a", "b"]},
        "c",
        "  - value: must be equal to one of the allowed values",
        id="enum",
    ),
    pytest.param({"const": "a"}, "b", "  - value: must be equal to constant", id="const"),
    pytest.param(
        {"minItems": 2}, [1], "  - value: must not have fewer than 2 items", id="minItems"
    ),
    pytest.param(
        {"maxItems": 1}, [1, 2], "  - value: must not have more than 1 items", id="maxItems"
    ),
    pytest.param(
        {"uniqueItems": True}, [1, 1], "  - value: must not have duplicate items", id="uniqueItems"
    ),
    pytest.param(
        {"items": [{}], "additionalItems": False},
        [1, 2],
        "  - value: must not have more than 1 items",
        id="additionalItems",
    ),
    pytest.param(
        {"contains": {"type": "string"}},
        [1],
        "  - value: must contain at least 1 valid item",
        id="contains",
    ),
    pytest.param(
        {"minProperties": 1}, {}, "  - value: must not have fewer than 1 properties", id="minProps"
    ),
    pytest.param(
        {"maxProperties": 1},
        {"a": 1, "b": 2},
        "  - value: must not have more than 1 properties",
        id="maxProps",
    ),
    pytest.param({"not": {"type": "string"}}, "x", "  - value: must not be valid", id="not"),
    pytest.param(False, 1, "  - value: schema is false", id="false-schema"),
]


@pytest.mark.parametrize(("schema", "given_value", "line"), WORDINGS)
def test_upstream_wording(schema: Any, given_value: Any, line: str) -> None:
    assert error_lines(value_schema(schema), {"value": given_value}) == [line]


def test_draft4_exclusive_bounds() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"value": {"minimum": 5, "exclusiveMinimum": True}},
    }
    assert error_lines(schema, {"value": 5}) == ["  - value: must be > 5"]


def test_required_names_the_first_missing_property_and_lists_all() -> None:
    names = ["a", "n", "i", "b", "arr"]
    schema = {"type": "object", "properties": {n: {} for n in names}, "required": names}
    assert error_lines(schema, {"i": 1}) == ["  - a: must have required properties a, n, b, arr"]


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
    assert error_lines(schema, {"a": {"b": {}}}) == ["  - a.b.c: must have required properties c"]


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
        "  - items.1.x: must be string"
    ]


def test_paths_through_refs() -> None:
    schema = {
        "type": "object",
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "properties": {"p": {"$ref": "#/$defs/P"}},
    }
    assert error_lines(schema, {"p": {"x": "a"}}) == ["  - p.x: must be integer"]


def test_additional_properties_false() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": False,
    }
    assert error_lines(schema, {"a": "x", "extra": 1}) == [
        "  - extra: schema is false",
        "  - root: must not have additional properties",
    ]


def test_additional_properties_false_in_a_nested_object() -> None:
    inner = {"type": "object", "properties": {"k": {}}, "additionalProperties": False}
    schema = {"type": "object", "properties": {"o": inner}}
    assert error_lines(schema, {"o": {"k": 1, "x": 2, "y": 3}}) == [
        "  - o.x: schema is false",
        "  - o.y: schema is false",
        "  - o: must not have additional properties",
    ]


def test_one_of_wording() -> None:
    schema = value_schema({"oneOf": [{"type": "integer"}, {"type": "number"}]})
    assert error_lines(schema, {"value": 1}) == [
        "  - value: must match exactly one schema in oneOf"
    ]
    assert error_lines(schema, {"value": "x"}) == [
        "  - value: must be integer",
        "  - value: must be number",
        "  - value: must match exactly one schema in oneOf",
    ]


def test_property_names_and_dependencies_wording() -> None:
    names = {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}
    assert error_lines(names, {"ok": 1, "B": 2, "C": 3}) == [
        "  - root: property names B, C are invalid"
    ]
    dependencies = {"type": "object", "dependencies": {"a": ["b", "c"]}}
    assert error_lines(dependencies, {"a": 1, "b": 2}) == [
        "  - root: must have properties b, c when property a is present"
    ]


@pytest.mark.parametrize("args", [[1, 2], "text", None, 3])
def test_non_object_arguments(args: Any) -> None:
    assert error_lines({"type": "object", "properties": {}}, args) == ["  - root: must be object"]


def test_invalid_schema_is_reported_as_tool_arguments_error() -> None:
    with pytest.raises(ToolArgumentsError, match='Invalid parameters schema for tool "t"'):
        validate({"type": "no-such-type"}, {})


def test_remote_refs_are_refused() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}}
    with pytest.raises(ToolArgumentsError, match="remote \\$ref is not supported"):
        validate(schema, {"a": 1})


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
        "any": 4,
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
