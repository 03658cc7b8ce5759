"""Tool-argument validation agrees with upstream pi-ai 1.6.0 (pi-schema 1.6.0).

Three parts:

* the recorded table: each case that upstream's experiment ran on the real packages, with the
  answer it recorded, for a plain JSON Schema;
* the same cases for the schema ``@tool`` generates from a typed function, run through the
  whole tool (validation, then structuring into the annotated types), so the two steps agree;
* a differential run: generated schemas and arguments given to pi-schema 1.6.0 itself (node,
  ``tests/validation_interop``) and to pi_core, answer for answer.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any, Literal

import anyio
import attrs
import pytest

from node_interop import find_node
from pi_core import (
    AbortController,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    TextContent,
    Tool,
    ToolArgumentsError,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core._decorator import tool
from pi_core._validation import validate_tool_arguments
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

Schema = dict[str, Any]
INTEROP = Path(__file__).parent / "validation_interop"


def obj(properties: Schema, required: list[str] | None = None, **extra: Any) -> Schema:
    """An object schema whose properties are all required unless told otherwise."""
    needed = list(properties) if required is None else required
    return {"type": "object", "properties": properties, "required": needed, **extra}


def outcome(schema: Schema, args: Any) -> tuple[str, Any]:
    """("ok", the validated value) or ("err", the error lines without their indent)."""
    tool_ = Tool(name="echo", description="", parameters=schema)
    try:
        return "ok", validate_tool_arguments(tool_, ToolCall(id="1", name="echo", arguments=args))
    except ToolArgumentsError as exc:
        head = str(exc).split("\n\nReceived arguments:")[0]
        return "err", [line.removeprefix("  - ") for line in head.splitlines()[1:]]


def same_json(actual: Any, expected: Any) -> bool:
    """Equal as JSON values; booleans are not numbers (``True == 1`` in Python)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and actual.keys() == expected.keys()
            and all(same_json(actual[key], expected[key]) for key in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(same_json(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected) and isinstance(actual, str) == isinstance(expected, str)


# --- the recorded table, plain JSON Schema -------------------------------------------------------

V_STRING = obj({"value": {"type": "string"}})
V_NUMBER = obj({"value": {"type": "number"}})
V_BOOLEAN = obj({"value": {"type": "boolean"}})
V_INTEGER = obj({"value": {"type": "integer"}})

TABLE: list[Any] = [
    (
        "string given object",
        V_STRING,
        {"value": {"x": 1}},
        "err",
        ["value: expected string, got object"],
    ),
    (
        "required missing",
        obj({"a": {"type": "string"}, "n": {"type": "number"}}),
        {},
        "err",
        ["a: missing", "n: missing"],
    ),
    ("number '42'", V_NUMBER, {"value": "42"}, "ok", {"value": 42}),
    ("number 'abc'", V_NUMBER, {"value": "abc"}, "err", ["value: expected number, got string"]),
    ("number ''", V_NUMBER, {"value": ""}, "ok", {"value": 0}),
    ("boolean '1'", V_BOOLEAN, {"value": "1"}, "ok", {"value": True}),
    ("boolean 'TRUE'", V_BOOLEAN, {"value": "TRUE"}, "ok", {"value": True}),
    ("null 'null'", obj({"value": {"type": "null"}}), {"value": "null"}, "ok", {"value": None}),
    ("integer '42.1'", V_INTEGER, {"value": "42.1"}, "ok", {"value": 42}),
    ("integer 2.5", V_INTEGER, {"value": 2.5}, "ok", {"value": 2}),
    ("string null (required)", V_STRING, {"value": None}, "ok", {"value": "null"}),
    (
        "optional string null",
        obj({"value": {"type": "string"}, "b": {"type": "string"}}, ["b"]),
        {"value": None, "b": "x"},
        "ok",
        {"b": "x"},
    ),
    (
        "array scalar",
        obj({"value": {"type": "array", "items": {"type": "string"}}}),
        {"value": "x"},
        "ok",
        {"value": ["x"]},
    ),
    (
        "type list [number,string] '1'",
        obj({"value": {"type": ["number", "string"]}}),
        {"value": "1"},
        "ok",
        {"value": "1"},
    ),
    (
        "type list [boolean,number] '1'",
        obj({"value": {"type": ["boolean", "number"]}}),
        {"value": "1"},
        "ok",
        {"value": 1},
    ),
    (
        "additionalProperties false",
        obj({"a": {"type": "string"}}, ["a"], additionalProperties=False),
        {"a": "x", "extra": 1},
        "err",
        ["extra: unknown field"],
    ),
    ("enum", obj({"m": {"enum": ["a", "b"]}}), {"m": "c"}, "err", ['m: expected one of ["a","b"]']),
    (
        "minimum",
        obj({"n": {"type": "number", "minimum": 5}}),
        {"n": 3},
        "err",
        ["n: expected >= 5"],
    ),
    (
        "minLength",
        obj({"s": {"type": "string", "minLength": 3}}),
        {"s": "ab"},
        "err",
        ["s: expected at least 3 characters"],
    ),
    (
        "pattern",
        obj({"s": {"type": "string", "pattern": "^a+$"}}),
        {"s": "b"},
        "err",
        ["s: expected to match ^a+$"],
    ),
    (
        "anyOf",
        obj({"n": {"anyOf": [{"type": "number"}, {"type": "boolean"}]}}),
        {"n": "zz"},
        "err",
        ["n: expected number, got string"],
    ),
    (
        "nested required",
        obj({"a": obj({"b": obj({"c": {"type": "string"}})})}),
        {"a": {"b": {}}},
        "err",
        ["a.b.c: missing"],
    ),
    (
        "array item",
        obj({"arr": {"type": "array", "items": obj({"x": {"type": "number"}})}}),
        {"arr": [{"x": "no"}]},
        "err",
        ["arr.0.x: expected number, got string"],
    ),
    (
        "non-object root",
        obj({"a": {"type": "string"}}),
        "str",
        "err",
        ["root: expected object, got string"],
    ),
    ("enum coercion 1 -> '1'", obj({"m": {"enum": ["1", "2"]}}), {"m": 1}, "ok", {"m": "1"}),
    ("const", obj({"m": {"const": "x"}}), {"m": "y"}, "err", ['m: expected "x"']),
    (
        "format email",
        obj({"e": {"type": "string", "format": "email"}}),
        {"e": "nope"},
        "err",
        ["e: expected format email"],
    ),
    # A TypeBox 1.x schema (what Type.Object(...) builds), with upstream's recorded answer.
    (
        "typebox object",
        {
            "type": "object",
            "required": ["n", "b", "s", "a", "u"],
            "properties": {
                "n": {"type": "integer"},
                "b": {"type": "boolean"},
                "s": {"type": "string"},
                "a": {"type": "array", "items": {"type": "string"}},
                "o": {"type": "string"},
                "u": {"anyOf": [{"type": "null"}, {"type": "number"}]},
            },
        },
        {"n": "3.7", "b": "TRUE", "s": 5, "a": "x", "o": None, "u": None},
        "ok",
        {"n": 3, "b": True, "s": "5", "a": ["x"], "u": None},
    ),
    ("extra keys kept", V_STRING, {"value": 5, "other": [1]}, "ok", {"value": "5", "other": [1]}),
]


@pytest.mark.parametrize(
    ("schema", "args", "kind", "expected"),
    [pytest.param(*row[1:], id=row[0]) for row in TABLE],
)
def test_the_recorded_table(schema: Schema, args: Any, kind: str, expected: Any) -> None:
    got_kind, got = outcome(schema, args)
    assert got_kind == kind
    assert same_json(got, expected) if kind == "ok" else got == expected


def test_the_whole_frame() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(
            Tool(name="echo", description="", parameters=V_STRING),
            ToolCall(id="1", name="echo", arguments={"value": {"x": 1}}),
        )
    assert str(info.value) == (
        'Validation failed for tool "echo":\n'
        "  - value: expected string, got object\n"
        "\n"
        "Received arguments:\n"
        '{\n  "value": {\n    "x": 1\n  }\n}'
    )


def test_arguments_that_could_not_be_read() -> None:
    call = ToolCall(
        id="1", name="echo", arguments={}, arguments_error='Unexpected end of JSON input in: {"v":'
    )
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(Tool(name="echo", description="", parameters=obj({})), call)
    assert (
        str(info.value)
        == 'Invalid arguments for tool "echo": Unexpected end of JSON input in: {"v":'
    )


# --- the same cases through @tool -----------------------------------------------------------------


@attrs.frozen
class Leaf:
    c: str


@attrs.frozen
class Middle:
    b: Leaf


@attrs.frozen
class Item:
    x: float


def received(fn: Any) -> AgentTool:
    """A tool of ``fn`` that answers with the keyword arguments it was called with."""

    async def execute(**kwargs: Any) -> Any:
        return kwargs

    execute.__name__ = "echo"
    execute.__annotations__ = fn.__annotations__
    execute.__signature__ = __import__("inspect").signature(fn)  # type: ignore[attr-defined]
    return tool(execute)


def _value_str(value: str) -> None: ...
def _a_n(a: str, n: float) -> None: ...
def _value_float(value: float) -> None: ...
def _value_bool(value: bool) -> None: ...
def _value_none(value: None) -> None: ...
def _value_int(value: int) -> None: ...
def _optional(b: str, value: str = "default") -> None: ...
def _value_list(value: list[str]) -> None: ...
def _float_or_str(value: float | str) -> None: ...
def _bool_or_float(value: bool | float) -> None: ...
def _m_ab(m: Literal["a", "b"]) -> None: ...
def _n_float_or_bool(n: float | bool) -> None: ...
def _nested(a: Middle) -> None: ...
def _items(arr: list[Item]) -> None: ...
def _m_12(m: Literal["1", "2"]) -> None: ...
def _m_x(m: Literal["x"]) -> None: ...
def _typebox(n: int, b: bool, s: str, a: list[str], u: float | None, o: str = "unset") -> None: ...


TOOL_TABLE: list[Any] = [
    (
        "string given object",
        _value_str,
        {"value": {"x": 1}},
        "err",
        ["value: expected string, got object"],
    ),
    ("required missing", _a_n, {}, "err", ["a: missing", "n: missing"]),
    ("number '42'", _value_float, {"value": "42"}, "ok", {"value": 42.0}),
    ("number 'abc'", _value_float, {"value": "abc"}, "err", ["value: expected number, got string"]),
    ("number ''", _value_float, {"value": ""}, "ok", {"value": 0.0}),
    ("boolean '1'", _value_bool, {"value": "1"}, "ok", {"value": True}),
    ("boolean 'TRUE'", _value_bool, {"value": "TRUE"}, "ok", {"value": True}),
    ("null 'null'", _value_none, {"value": "null"}, "ok", {"value": None}),
    ("integer '42.1'", _value_int, {"value": "42.1"}, "ok", {"value": 42}),
    ("integer 2.5", _value_int, {"value": 2.5}, "ok", {"value": 2}),
    ("string null (required)", _value_str, {"value": None}, "ok", {"value": "null"}),
    # The dropped null leaves the parameter out, so the function's default applies.
    ("optional string null", _optional, {"value": None, "b": "x"}, "ok", {"b": "x"}),
    ("array scalar", _value_list, {"value": "x"}, "ok", {"value": ["x"]}),
    ("type list [number,string] '1'", _float_or_str, {"value": "1"}, "ok", {"value": "1"}),
    ("type list [boolean,number] '1'", _bool_or_float, {"value": "1"}, "ok", {"value": 1}),
    ("enum", _m_ab, {"m": "c"}, "err", ['m: expected one of ["a","b"]']),
    # @tool writes a union of plain types as a type list, not anyOf: upstream's answer for it.
    ("anyOf", _n_float_or_bool, {"n": "zz"}, "err", ["n: expected number or boolean, got string"]),
    ("nested required", _nested, {"a": {"b": {}}}, "err", ["a.b.c: missing"]),
    ("array item", _items, {"arr": [{"x": "no"}]}, "err", ["arr.0.x: expected number, got string"]),
    ("non-object root", _value_str, "str", "err", ["root: expected object, got string"]),
    ("enum coercion 1 -> '1'", _m_12, {"m": 1}, "ok", {"m": "1"}),
    # Literal["x"] is an enum of one: upstream's enum wording.
    ("const", _m_x, {"m": "y"}, "err", ['m: expected one of ["x"]']),
    (
        "typebox object",
        _typebox,
        {"n": "3.7", "b": "TRUE", "s": 5, "a": "x", "o": None, "u": None},
        "ok",
        {"n": 3, "b": True, "s": "5", "a": ["x"], "u": None},
    ),
]
"""The table's rows that a typed function can express (no @tool type sets a minimum, a
pattern, a minimum length, an email format or ``additionalProperties: false``)."""


async def run_tool(agent_tool: AgentTool, args: Any) -> Any:
    validated = validate_tool_arguments(agent_tool, ToolCall(id="1", name="echo", arguments=args))
    return await agent_tool.execute("1", validated, AbortController().signal, lambda _: None)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fn", "args", "kind", "expected"),
    [pytest.param(*row[1:], id=row[0]) for row in TOOL_TABLE],
)
async def test_the_table_through_a_typed_function(
    fn: Any, args: Any, kind: str, expected: Any
) -> None:
    agent_tool = received(fn)
    if kind == "err":
        assert outcome(agent_tool.parameters, args) == ("err", expected)
        return
    kwargs = await run_tool(agent_tool, args)
    assert kwargs == expected
    assert [type(value) for value in kwargs.values()] == [type(v) for v in expected.values()]


@pytest.mark.anyio
async def test_classes_come_back_as_their_types() -> None:
    kwargs = await run_tool(received(_nested), {"a": {"b": {"c": 5}}})
    assert kwargs == {"a": Middle(Leaf("5"))}
    kwargs = await run_tool(received(_items), {"arr": {"x": "2.5"}})
    assert kwargs == {"arr": [Item(2.5)]}


@attrs.frozen
class Circle:
    kind: Literal["circle"]
    r: float


@attrs.frozen
class Square:
    kind: Literal["square"]
    r: float  # the same field name: cattrs alone could not tell the classes apart


@attrs.frozen
class Named:
    x: str


@attrs.frozen
class Counted:
    x: int


def _shape(shape: Circle | Square) -> None: ...
def _first_member(value: Counted | Named) -> None: ...
def _int_or_str(value: int | str) -> None: ...
def _list_or_one(value: list[Counted] | Counted) -> None: ...


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fn", "args", "expected"),
    [
        pytest.param(
            _shape, {"shape": {"kind": "square", "r": "2"}}, Square("square", 2.0), id="tag"
        ),
        pytest.param(_first_member, {"value": {"x": 7}}, Counted(7), id="first-member"),
        # Named accepts it as it is, so it is not converted for Counted, the first member.
        pytest.param(_first_member, {"value": {"x": "7"}}, Named("7"), id="kept-as-is"),
        # 7.0 is an integer to JSON Schema: Counted takes it, as the integer 7.
        pytest.param(_first_member, {"value": {"x": 7.0}}, Counted(7), id="integral"),
        pytest.param(_int_or_str, {"value": 5.0}, 5, id="integral-float"),
        pytest.param(_list_or_one, {"value": {"x": 1}}, Counted(1), id="list-or-one"),
        pytest.param(_list_or_one, {"value": [{"x": "1"}]}, [Counted(1)], id="list"),
    ],
)
async def test_unions_are_structured_as_validation_read_them(
    fn: Any, args: Any, expected: Any
) -> None:
    kwargs = await run_tool(received(fn), args)
    assert list(kwargs.values()) == [expected]
    assert type(next(iter(kwargs.values()))) is type(expected)


# --- differential: generated cases, pi-schema 1.6.0 against pi_core -------------------------------

LEAVES: list[Schema] = [
    {"type": "string"},
    {"type": "number"},
    {"type": "integer"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": ["integer", "null"]},
    {"type": ["number", "string"]},
    {"type": ["boolean", "number"]},
    {"type": ["string", "null"]},
    {"enum": ["a", "b"]},
    {"enum": ["1", "2"]},
    {"enum": [1, 2, "x"]},
    {"const": "x"},
    {"const": 3},
    {"const": True},
    {"type": "string", "minLength": 2},
    {"type": "string", "maxLength": 2},
    {"type": "string", "pattern": "^a+$"},
    {"type": "number", "minimum": 5},
    {"type": "number", "maximum": 5},
    {"type": "integer", "exclusiveMinimum": 0},
    {"type": "number", "multipleOf": 3},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "uuid"},
    {"anyOf": [{"type": "number"}, {"type": "boolean"}]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    {"$ref": "#/$defs/Count"},
    {"allOf": [{"type": "integer"}, {"minimum": 1}]},
    {},
]
VALUES: list[Any] = [
    "42", "-7", "2.5", "", "  ", "abc", "true", "TRUE", "false", "1", "0", "null", "undefined",
    "x", "a", "aa", "12n", "0x10", "1e3", 42, 0, 1, 2.5, -3, True, False, None, [], ["x"],
    [1, "2"], {}, {"x": 1}, "user@example.com", "2024-01-01T00:00:00Z",
    "123e4567-e89b-12d3-a456-426614174000",
]  # fmt: skip


def _schema(rng: random.Random, depth: int = 0) -> Schema:
    roll = rng.random()
    if depth < 2 and roll < 0.25:
        properties = {f"p{i}": _schema(rng, depth + 1) for i in range(rng.randint(1, 3))}
        node = obj(properties, [key for key in properties if rng.random() < 0.6])
        if rng.random() < 0.3:
            node["additionalProperties"] = False
        return node
    if depth < 2 and roll < 0.4:
        array: Schema = {"type": "array", "items": _schema(rng, depth + 1)}
        if rng.random() < 0.2:
            array["minItems"] = 1
        return array
    leaf: Schema = json.loads(json.dumps(rng.choice(LEAVES)))  # a copy of its own
    return leaf


def _value(schema: Schema, rng: random.Random) -> Any:
    if schema.get("type") == "object" and rng.random() < 0.85:
        value = {
            key: _value(sub, rng) for key, sub in schema["properties"].items() if rng.random() < 0.8
        }
        return {**value, "extra": 1} if rng.random() < 0.15 else value
    if schema.get("type") == "array" and rng.random() < 0.6:
        return [_value(schema["items"], rng) for _ in range(rng.randint(0, 2))]
    return rng.choice(VALUES)


def generated_cases(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        inner = _schema(rng)
        schema = obj({"v": inner}, ["v"] if rng.random() < 0.7 else [])
        schema["$defs"] = {"Count": {"type": "integer", "minimum": 0}}
        args = {"v": _value(inner, rng)} if rng.random() < 0.9 else {}
        cases.append({"schema": schema, "args": args})
    return cases


def typed_function_cases() -> list[dict[str, Any]]:
    """The schemas @tool writes, with arguments of many shapes."""
    functions = [row[1] for row in TOOL_TABLE] + [_shape, _first_member, _list_or_one]
    cases = []
    for fn in functions:
        parameters = received(fn).parameters
        for value in [*VALUES, {"kind": "square", "r": "2"}, {"x": "7"}, {"b": {"c": 1}}]:
            for key in parameters["properties"]:
                cases.append({"schema": parameters, "args": {key: value}})
    return cases


def upstream(node: str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [node, str(INTEROP / "validate.mjs")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers


def disagreements(node: str, cases: list[dict[str, Any]]) -> list[str]:
    found = []
    for case, theirs in zip(cases, upstream(node, cases), strict=True):
        kind, ours = outcome(case["schema"], case["args"])
        agree = (kind == "ok") == theirs["ok"] and (
            same_json(ours, theirs["value"]) if kind == "ok" else ours == theirs["lines"]
        )
        if not agree:
            found.append(f"{json.dumps(case)}: pi-schema {theirs}, pi_core {kind} {ours}")
    return found


@pytest.fixture(scope="module")
def node() -> str:
    return find_node(INTEROP)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_cases_agree_with_pi_schema(node: str, seed: int) -> None:
    assert disagreements(node, generated_cases(400, seed)) == []


def test_typed_function_schemas_agree_with_pi_schema(node: str) -> None:
    assert disagreements(node, typed_function_cases()) == []


# --- a run: a call whose arguments could not be read never reaches its tool -----------------------


@pytest.mark.anyio
async def test_a_run_answers_unreadable_arguments_without_running_the_tool() -> None:
    ran: list[Any] = []

    async def execute(*args: Any) -> str:
        ran.append(args)
        return "ran"

    provider = FauxProvider()
    broken = attrs.evolve(
        faux_tool_call("echo", {}, id="c1"), arguments_error="Unexpected end of JSON input"
    )
    provider.set_responses(
        [faux_assistant_message([broken], stop_reason="toolUse"), faux_assistant_message("ok")]
    )
    echo = AgentTool("echo", "Echoes.", obj({}), execute)
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    with anyio.fail_after(10):
        new = await run_agent_loop(
            [UserMessage("go")], AgentContext(tools=[echo]), config, lambda _: None
        )
    [result] = [m for m in new if isinstance(m, ToolResultMessage)]
    assert result.is_error
    assert result.content == [
        TextContent('Invalid arguments for tool "echo": Unexpected end of JSON input')
    ]
    assert ran == []
