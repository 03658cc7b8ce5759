"""What a tool may return: a result, a str, or a JSON value the model reads as JSON text."""

from __future__ import annotations

import dataclasses
import datetime
import math
import uuid
from typing import Any

import attrs
import pytest

from pi_core import AgentToolResult, TextContent, ToolResultMessage, serialization, tool
from support import make_tool, run_tool_call

pytestmark = pytest.mark.anyio


@attrs.frozen
class Forecast:
    city: str
    day: datetime.date
    tags: frozenset[str] = frozenset()


@dataclasses.dataclass
class Report:
    forecast: Forecast
    readings: list[float]
    station_id: uuid.UUID | None = None


async def result_of(value: object) -> ToolResultMessage:
    """The result message of a plain ``AgentTool`` whose ``execute`` returns ``value``."""

    async def execute(*_: Any) -> object:
        return value

    result, _ = await run_tool_call(make_tool("t", execute), {})
    return result


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": 1, "b": [1, 2], "c": None}, '{"a": 1, "b": [1, 2], "c": null}'),
        ([1, "two", 3.5], '[1, "two", 3.5]'),
        (42, "42"),
        (2.5, "2.5"),
        (True, "true"),
        (None, "null"),
        ({"city": "Zürich"}, '{"city": "Zürich"}'),
    ],
    ids=["dict", "list", "int", "float", "bool", "None", "non-ascii"],
)
async def test_a_json_value_is_sent_as_json_text_and_kept_in_details(
    value: object, text: str
) -> None:
    result = await result_of(value)
    assert result.content == [TextContent(text)]
    assert result.details is value or result.details == value
    assert not result.is_error


async def test_attrs_and_dataclass_instances_are_unstructured_with_their_field_names() -> None:
    station = uuid.UUID(int=7)
    report = Report(
        Forecast("Lisbon", datetime.date(2026, 5, 1), frozenset({"sun"})), [1.5], station
    )
    result = await result_of(report)
    assert result.content == [
        TextContent(
            '{"forecast": {"city": "Lisbon", "day": "2026-05-01", "tags": ["sun"]}, '
            '"readings": [1.5], "station_id": "00000000-0000-0000-0000-000000000007"}'
        )
    ]
    assert result.details is report


async def test_the_result_message_with_a_value_in_details_serializes() -> None:
    result = await result_of({"n": 1})
    assert serialization.loads(serialization.dumps(result), ToolResultMessage) == result


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (object(), "Object of type object is not JSON serializable"),
        (b"bytes", "Object of type bytes is not JSON serializable"),
        ({"x": math.nan}, "Out of range float values are not JSON compliant"),
    ],
    ids=["object", "bytes", "nan"],
)
async def test_a_value_json_cannot_carry_is_an_error_result_saying_so(
    value: object, why: str
) -> None:
    result = await result_of(value)
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    name = type(value).__name__
    assert block.text.startswith(
        f"Tool t returned {name}, which cannot be sent to the model as JSON ({why}"
    )
    assert block.text.endswith("; return a str, an AgentToolResult or a JSON value")


async def test_a_decorated_tool_returning_a_dict_works() -> None:
    @tool
    async def weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        return {"city": city, "sunny": True}

    result, _ = await run_tool_call(weather, {"city": "Porto"})
    assert result.content == [TextContent('{"city": "Porto", "sunny": true}')]
    assert result.details == {"city": "Porto", "sunny": True}


async def test_a_result_and_a_str_are_unchanged() -> None:
    given = AgentToolResult([TextContent("x")], details=[1])
    assert (await result_of(given)).details == [1]
    assert (await result_of("plain")).content == [TextContent("plain")]
    assert (await result_of("plain")).details is None
