"""@tool: schema from the signature, description from the docstring, injection, structuring."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal, Optional, Union

import attrs
import pytest

from pi_core import (
    AbortController,
    AgentTool,
    AgentToolResult,
    TextContent,
    ToolArgumentsError,
    ToolCall,
)
from pi_core._decorator import tool
from pi_core._validation import validate_tool_arguments

pytestmark = pytest.mark.anyio


@attrs.frozen
class Point:
    """A point on the plane.

    More text that is not part of the summary.

    Attributes:
        x: sections are left out of the description.
    """

    x: int
    y: float = 0.0


@attrs.frozen
class Route:
    points: list[Point]
    name: str | None = None
    closed: bool = attrs.field(default=False, metadata={"description": "Join the ends."})
    tags: list[str] = attrs.Factory(list)


@attrs.define
class Node:
    children: list[Node]


POINT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "number", "default": 0.0}},
    "required": ["x"],
    "description": "A point on the plane.\n\nMore text that is not part of the summary.",
}


def tool_with(annotation: Any) -> AgentTool:
    """A tool with one parameter ``x`` of the given annotation."""

    async def probe(x: Any) -> str:
        return repr(x)

    probe.__annotations__ = {"x": annotation, "return": str}
    return tool(probe)


def no_updates(_partial: AgentToolResult) -> None:
    pass


async def run(agent_tool: AgentTool, params: Any, tool_call_id: str = "call-1") -> Any:
    return await agent_tool.execute(tool_call_id, params, AbortController().signal, no_updates)


# --- building the tool ---------------------------------------------------------------------------


async def test_bare_decorator_builds_an_agent_tool() -> None:
    @tool
    async def greet(name: str) -> str:
        """Say hello."""
        return f"hello {name}"

    assert isinstance(greet, AgentTool)
    assert greet.name == "greet"
    assert greet.label == "greet"
    assert greet.description == "Say hello."
    assert greet.parameters == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    assert greet.execution_mode is None
    assert greet.timeout is None
    assert greet.prepare_arguments is None
    assert await run(greet, {"name": "pi"}) == "hello pi"


def test_decorator_options() -> None:
    def shim(raw: Any) -> Any:
        return raw

    @tool(
        name="renamed",
        description="Explicit.",
        label="Renamed tool",
        execution_mode="sequential",
        timeout=2.5,
        prepare_arguments=shim,
    )
    async def original(value: int) -> str:
        """Docstring that loses to description=."""
        return str(value)

    assert original.name == "renamed"
    assert original.description == "Explicit."
    assert original.label == "Renamed tool"
    assert original.execution_mode == "sequential"
    assert original.timeout == 2.5
    assert original.prepare_arguments is shim


def test_decorator_with_empty_parentheses() -> None:
    @tool()
    async def nothing() -> str:
        return ""

    assert nothing.name == "nothing"
    assert nothing.parameters == {"type": "object", "properties": {}}


# --- the JSON Schema of each supported annotation ------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (list, {"type": "array"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (
            list[list[str]],
            {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        ),
        (dict, {"type": "object"}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Literal[True], {"type": "boolean", "enum": [True]}),
        (Literal["a", 1, None], {"type": ["string", "integer", "null"], "enum": ["a", 1, None]}),
        (int | None, {"type": ["integer", "null"]}),
        (Optional[str], {"type": ["string", "null"]}),  # noqa: UP045
        (Union[int, str], {"type": ["integer", "string"]}),  # noqa: UP007
        (Literal["a"] | None, {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}),
        (
            list[int] | None,
            {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        ),
        (Point, POINT_SCHEMA),
        (Point | None, {"anyOf": [POINT_SCHEMA, {"type": "null"}]}),
        (list[Point], {"type": "array", "items": POINT_SCHEMA}),
        (dict[str, Point], {"type": "object", "additionalProperties": POINT_SCHEMA}),
    ],
)
def test_schema_of_each_supported_annotation(annotation: Any, schema: dict[str, Any]) -> None:
    assert tool_with(annotation).parameters == {
        "type": "object",
        "properties": {"x": schema},
        "required": ["x"],
    }


def test_nested_attrs_classes() -> None:
    assert tool_with(Route).parameters["properties"]["x"] == {
        "type": "object",
        "properties": {
            "points": {"type": "array", "items": POINT_SCHEMA},
            "name": {"type": ["string", "null"], "default": None},
            "closed": {"type": "boolean", "description": "Join the ends.", "default": False},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["points"],
    }


def test_defaults_make_parameters_optional() -> None:
    marker = object()

    @tool
    async def search(
        query: str,
        limit: int = 10,
        fields: list[str] | None = None,
        anything: Any = marker,
    ) -> str:
        return query

    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "fields": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
            },
            "anything": {},  # a default that is not JSON stays out of the schema
        },
        "required": ["query"],
    }


def test_a_mutable_default_is_copied_into_the_schema() -> None:
    shared = ["a"]

    async def pick(choices: list[str] = shared) -> str:
        return ""

    schema = tool(pick).parameters["properties"]["choices"]
    assert schema["default"] == ["a"]
    assert schema["default"] is not shared


# --- description and docstrings ------------------------------------------------------------------


def test_description_and_argument_docs_from_a_google_docstring() -> None:
    @tool
    async def move(point: Point, mode: str = "fast", steps: int = 1) -> str:
        """Move a point.

        Moves it in as many steps as asked.

        Args:
            point: The point to move. This text goes on
                over two lines.
            mode (str): How fast.
            steps: How many steps.

        Returns:
            A report.
        """
        return ""

    assert move.description == "Move a point.\n\nMoves it in as many steps as asked."
    properties = move.parameters["properties"]
    assert (
        properties["point"]["description"] == "The point to move. This text goes on over two lines."
    )
    assert properties["mode"]["description"] == "How fast."
    assert properties["steps"]["description"] == "How many steps."


def test_no_docstring_gives_an_empty_description() -> None:
    @tool
    async def silent(x: int) -> str:
        return ""

    assert silent.description == ""
    assert "description" not in silent.parameters["properties"]["x"]


# --- injected parameters --------------------------------------------------------------------------


async def test_runtime_parameters_are_injected_by_name_and_not_in_the_schema() -> None:
    seen: dict[str, Any] = {}
    controller = AbortController()

    @tool
    async def probe(text: str, tool_call_id: str, signal: Any, on_update: Any) -> str:
        seen.update(tool_call_id=tool_call_id, signal=signal, on_update=on_update)
        on_update(AgentToolResult([TextContent("half way")]))
        return text

    assert probe.parameters == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    updates: list[AgentToolResult] = []
    result = await probe.execute("id-7", {"text": "done"}, controller.signal, updates.append)
    assert result == "done"
    assert seen == {
        "tool_call_id": "id-7",
        "signal": controller.signal,
        "on_update": updates.append,
    }
    assert updates == [AgentToolResult([TextContent("half way")])]


async def test_only_the_requested_runtime_parameters_are_passed() -> None:
    @tool
    async def probe(signal: Any) -> str:
        return "aborted" if signal.aborted else "running"

    assert probe.parameters == {"type": "object", "properties": {}}
    assert await run(probe, {}) == "running"


# --- structuring the validated arguments ----------------------------------------------------------


async def test_arguments_are_structured_into_attrs_classes() -> None:
    received: list[Any] = []

    @tool
    async def draw(route: Route, origin: Point | None, extra: dict[str, Point]) -> str:
        received.extend([route, origin, extra])
        return "ok"

    params = {
        "route": {"points": [{"x": 1}, {"x": 2, "y": 3}], "closed": True},
        "origin": None,
        "extra": {"a": {"x": 5}},
    }
    await run(draw, params)
    assert received == [
        Route(points=[Point(1), Point(2, 3.0)], closed=True),
        None,
        {"a": Point(5)},
    ]
    assert isinstance(received[0].points[1].y, float)


async def test_plain_values_are_structured_into_their_types() -> None:
    received: dict[str, Any] = {}

    @tool
    async def probe(
        ratio: float, counts: list[float], choice: Literal["a", "b"], either: int | str
    ) -> str:
        received.update(ratio=ratio, counts=counts, choice=choice, either=either)
        return ""

    await run(probe, {"ratio": 2, "counts": [1, 2.5], "choice": "b", "either": "s"})
    assert received == {"ratio": 2.0, "counts": [1.0, 2.5], "choice": "b", "either": "s"}
    assert isinstance(received["ratio"], float)


async def test_unknown_keys_are_ignored_and_left_out_parameters_keep_their_default() -> None:
    @tool
    async def probe(a: int, b: int = 7) -> str:
        return f"{a} {b}"

    assert await run(probe, {"a": 1, "unexpected": True}) == "1 7"


async def test_validation_then_execution_end_to_end() -> None:
    @tool
    async def add(a: int, b: float, point: Point | None = None) -> str:
        return f"{a + b} {point}"

    args = validate_tool_arguments(
        add, ToolCall("c1", "add", {"a": "2", "b": "0.5", "point": {"x": "3"}})
    )
    assert args == {"a": 2, "b": 0.5, "point": {"x": 3}}
    assert await run(add, args) == "2.5 Point(x=3, y=0.0)"


async def test_a_structuring_failure_is_a_tool_arguments_error() -> None:
    @tool
    async def probe(point: Point) -> str:
        return ""

    with pytest.raises(ToolArgumentsError, match='Invalid arguments for tool "probe"'):
        await run(probe, {"point": {"x": "not a number"}})


async def test_non_object_params_are_refused() -> None:
    @tool
    async def probe(a: int) -> str:
        return ""

    with pytest.raises(ToolArgumentsError, match="must be an object"):
        await run(probe, [1])


async def test_return_values_pass_through() -> None:
    result = AgentToolResult([TextContent("x")], details={"k": 1}, terminate=True)

    @tool
    async def structured() -> AgentToolResult:
        return result

    @tool
    async def plain() -> str:
        return "text"

    assert await run(structured, {}) is result
    assert await run(plain, {}) == "text"


def test_the_original_function_stays_reachable() -> None:
    async def original(a: int) -> str:
        return ""

    assert tool(original).execute.__wrapped__ is original  # type: ignore[attr-defined]


# --- errors at decoration time --------------------------------------------------------------------


def test_a_sync_function_builds_a_tool_with_the_same_schema() -> None:
    def sync(a: int, signal: Any = None) -> str:
        """Echo a number."""
        return str(a)

    built = tool(sync)
    assert built.description == "Echo a number."
    assert built.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }


async def test_a_sync_function_is_called_with_its_arguments() -> None:
    def sync(a: int, tool_call_id: str) -> str:
        return f"{a} {tool_call_id}"

    assert await run(tool(sync), {"a": 3}) == "3 call-1"


def test_generators_are_refused() -> None:
    async def stream(a: int) -> AsyncIterator[str]:
        yield ""

    def lines(a: int) -> Iterator[str]:
        yield ""

    for generator in (stream, lines):
        with pytest.raises(TypeError, match="not a generator"):
            tool(generator)


def test_var_args_are_refused() -> None:
    async def star(*args: int) -> str:
        return ""

    async def double_star(**kwargs: int) -> str:
        return ""

    with pytest.raises(TypeError, match=r"\*args or \*\*kwargs"):
        tool(star)
    with pytest.raises(TypeError, match=r"\*args or \*\*kwargs"):
        tool(double_star)


def test_positional_only_parameters_are_refused() -> None:
    async def positional(a: int, /) -> str:
        return ""

    with pytest.raises(TypeError, match="positional-only"):
        tool(positional)


def test_a_missing_annotation_is_refused() -> None:
    async def bare(a) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(TypeError, match="needs a type"):
        tool(bare)


@pytest.mark.parametrize(
    "annotation",
    [
        complex,
        object,
        bytes,
        dict[int, str],
        Literal[b"x"],
        list[complex],
    ],
)
def test_unsupported_annotations_are_refused(annotation: Any) -> None:
    with pytest.raises(TypeError, match="@tool"):
        tool_with(annotation)


def test_a_class_that_contains_itself_is_refused() -> None:
    with pytest.raises(TypeError, match="contains itself"):
        tool_with(Node)


def test_an_unresolvable_annotation_is_refused() -> None:
    async def probe(x: int) -> str:
        return ""

    probe.__annotations__ = {"x": "NoSuchType", "return": "str"}
    with pytest.raises(TypeError, match="cannot resolve"):
        tool(probe)
