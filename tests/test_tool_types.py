"""``@tool`` parameter types beyond the JSON scalars: their schemas, and the values the function
receives after the model's JSON is validated and structured, as in a run."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, NewType, TypedDict

import attrs
import pytest
from typing_extensions import NotRequired

from pi_core import Agent, AgentTool, ToolArgumentsError, ToolCall, tool, validate_tool_arguments
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import check_transcript

pytestmark = pytest.mark.anyio


class Color(enum.Enum):
    """A color of the palette."""

    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    """A point on the plane."""

    x: int
    y: Annotated[int, "the height"] = 0
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Segment:
    start: Point
    end: Point


class Options(TypedDict):
    """How to search."""

    query: str
    limit: NotRequired[int]


class Loose(TypedDict, total=False):
    note: str


UserId = NewType("UserId", int)


@attrs.frozen
class Box:
    size: Annotated[float, "the edge in cm"]
    color: Color = Color.RED


async def call(fn_tool: AgentTool, **arguments: Any) -> Any:
    """What the loop does with a model's call: validate and coerce, then execute."""
    params = validate_tool_arguments(fn_tool, ToolCall("c1", fn_tool.name, arguments))
    return await fn_tool.execute("c1", params, None, lambda partial: None)  # type: ignore[arg-type]


def echo(annotation: Any) -> AgentTool:
    """A tool whose one parameter ``value`` has ``annotation``; it returns what it received."""

    async def echo(value: Any) -> Any:
        return value

    echo.__annotations__ = {"value": annotation, "return": Any}
    return tool(echo)


def schema_of(annotation: Any) -> dict[str, Any]:
    schema: dict[str, Any] = echo(annotation).parameters["properties"]["value"]
    return schema


# --- schemas --------------------------------------------------------------------------------


def _test_id(value: object) -> str:
    # A set's repr follows the hash seed, and pytest-xdist's workers must agree on the ids.
    if isinstance(value, (set, frozenset)):
        return repr(sorted(value))[:30]
    return getattr(value, "__name__", None) or repr(value)[:30]


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (
            Color,
            {"type": "string", "enum": ["red", "green"], "description": "A color of the palette."},
        ),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (datetime.datetime, {"type": "string", "format": "date-time"}),
        (datetime.date, {"type": "string", "format": "date"}),
        (datetime.time, {"type": "string", "format": "time"}),
        (datetime.timedelta, {"type": "number"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (decimal.Decimal, {"type": "number"}),
        (Path, {"type": "string"}),
        (UserId, {"type": "integer"}),
        (
            tuple[int, int],
            {
                "type": "array",
                "items": [{"type": "integer"}, {"type": "integer"}],
                "additionalItems": False,
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
        (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        (frozenset[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
        (Sequence[float], {"type": "array", "items": {"type": "number"}}),
        (Mapping[str, bool], {"type": "object", "additionalProperties": {"type": "boolean"}}),
        (Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
        (
            Point,
            {
                "type": "object",
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "integer", "description": "the height", "default": 0},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["x"],
                "description": "A point on the plane.",
            },
        ),
        (
            Options,
            {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
                "description": "How to search.",
            },
        ),
        (Loose, {"type": "object", "properties": {"note": {"type": "string"}}}),
        (
            Box,
            {
                "type": "object",
                "properties": {
                    "size": {"type": "number", "description": "the edge in cm"},
                    "color": {
                        "type": "string",
                        "enum": ["red", "green"],
                        "description": "A color of the palette.",
                        "default": "red",
                    },
                },
                "required": ["size"],
            },
        ),
    ],
    ids=_test_id,
)
def test_the_schema_of_each_type(annotation: Any, schema: dict[str, Any]) -> None:
    assert schema_of(annotation) == schema


def test_a_dataclass_without_a_docstring_has_no_generated_description() -> None:
    assert "description" not in schema_of(Segment)
    assert schema_of(Segment)["properties"]["start"]["required"] == ["x"]


def test_annotated_text_wins_over_the_docstring_and_the_docstring_fills_the_rest() -> None:
    @tool
    async def paint(
        color: Annotated[Color, "the paint"], coats: int = 1, when: Level = Level.LOW
    ) -> str:
        """Paint the wall.

        Args:
            color: overridden by the annotation.
            coats: how many coats.
        """
        return ""

    properties = paint.parameters["properties"]
    assert properties["color"]["description"] == "the paint"
    assert properties["coats"] == {
        "type": "integer",
        "description": "how many coats.",
        "default": 1,
    }
    assert properties["when"]["default"] == 1


@pytest.mark.parametrize(
    "annotation",
    [complex, bytes, Annotated[complex, "x"], list[object]],
)
def test_types_with_no_json_form_are_refused_when_decorating(annotation: Any) -> None:
    with pytest.raises(TypeError, match="@tool: unsupported annotation"):
        echo(annotation)


def test_an_enum_with_values_json_cannot_hold_is_refused() -> None:
    class Pair(enum.Enum):
        A = (1, 2)

    with pytest.raises(TypeError, match=r"unsupported Literal value \(1, 2\)"):
        echo(Pair)


# --- values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "sent", "received"),
    [
        (Color, "green", Color.GREEN),
        (Level, "2", Level.HIGH),  # coerced to the integer first, as upstream coerces
        (
            datetime.datetime,
            "2025-06-01T12:00:00Z",
            datetime.datetime(2025, 6, 1, 12, tzinfo=datetime.timezone.utc),
        ),
        (
            datetime.datetime,
            "2025-06-01T12:00:00+02:00",
            datetime.datetime(
                2025, 6, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
            ),
        ),
        (datetime.date, "2025-06-01", datetime.date(2025, 6, 1)),
        (datetime.time, "12:30:00", datetime.time(12, 30)),
        (datetime.timedelta, 90, datetime.timedelta(seconds=90)),
        (
            uuid.UUID,
            "12345678-1234-5678-1234-567812345678",
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
        ),
        (decimal.Decimal, 0.1, decimal.Decimal("0.1")),
        (Path, "docs/index.md", Path("docs/index.md")),
        (UserId, 7, 7),
        (tuple[int, int], [3, 4], (3, 4)),
        (tuple[str, ...], ["a", "b"], ("a", "b")),
        (set[str], ["a", "b"], {"a", "b"}),
        (frozenset[int], [1], frozenset({1})),
        (Annotated[int, "how many"], "5", 5),
        (Point, {"x": 1}, Point(1, 0, [])),
        (Segment, {"start": {"x": 1}, "end": {"x": 2, "y": 3}}, Segment(Point(1), Point(2, 3))),
        (Options, {"query": "pi"}, {"query": "pi"}),
        (Box, {"size": 2}, Box(2.0)),
    ],
    ids=_test_id,
)
async def test_the_function_receives_the_annotated_type(
    annotation: Any, sent: Any, received: Any
) -> None:
    value = await call(echo(annotation), value=sent)
    assert value == received
    assert type(value) is type(received)


@pytest.mark.parametrize(
    ("annotation", "sent", "error"),
    [
        (Color, "blue", 'value: expected one of ["red","green"]'),
        (datetime.datetime, "2025-06-01T12:00:00", "value: expected format date-time"),
        (datetime.date, "June 1st", "value: expected format date"),
        (uuid.UUID, "nope", "value: expected format uuid"),
        (tuple[int, int], [1, 2, 3], "value.2: no value is allowed here"),
        (set[str], ["a", "a"], "value: expected unique items"),
        (Options, {"limit": 3}, "value.query: missing"),
    ],
    ids=_test_id,
)
async def test_values_outside_the_type_are_told_to_the_model(
    annotation: Any, sent: Any, error: str
) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        await call(echo(annotation), value=sent)
    assert error in str(info.value)


async def test_a_run_with_typed_tools_from_model_json_to_result() -> None:
    received: list[Any] = []

    @tool
    async def schedule(
        at: datetime.datetime, where: tuple[float, float], color: Color, point: Point
    ) -> str:
        """Schedule a paint job."""
        received.extend([at, where, color, point])
        return "scheduled"

    provider = FauxProvider()
    arguments = {
        "at": "2025-06-01T09:00:00Z",
        "where": [38.7, -9.1],
        "color": "red",
        "point": {"x": "3", "y": 4},
    }
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call("schedule", arguments)], stop_reason="toolUse"),
            faux_assistant_message("Done."),
        ]
    )
    agent = Agent(model=provider.get_model(), stream_fn=provider.stream, tools=[schedule])
    result = await agent.prompt("Paint it.")
    assert result.raise_for_error().text == "Done."
    check_transcript(agent.state.messages)
    assert received == [
        datetime.datetime(2025, 6, 1, 9, tzinfo=datetime.timezone.utc),
        (38.7, -9.1),
        Color.RED,
        Point(3, 4),
    ]
