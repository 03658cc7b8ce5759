"""The output tool of a type: its schema, reading a value back, and the partial output."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, TypedDict

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_core import MessageUpdate, TextContent, ToolArgumentsError, ToolCall
from pi_core._output import OUTPUT_TOOL, OutputSpec, partial_output
from pi_core._tool_schema import converter
from pi_core.providers.faux import faux_assistant_message


@attrs.frozen
class Invoice:
    """An invoice, as the model read it."""

    number: str
    total: float
    paid: bool = False
    lines: list[str] = attrs.Factory(list)


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


class Size(enum.Enum):
    S = "s"
    L = "l"


class Named(TypedDict):
    name: str


def spec(output_type: Any) -> OutputSpec:
    found = OutputSpec.of(output_type)
    assert found is not None
    return found


def call(arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id="o1", name=OUTPUT_TOOL, arguments=arguments)


@pytest.mark.parametrize("plain", [None, str])
def test_no_type_and_str_are_plain_text(plain: Any) -> None:
    assert OutputSpec.of(plain) is None


def test_an_attrs_class_is_the_tools_parameters() -> None:
    found = spec(Invoice)
    assert found.tool.name == "final_result"
    assert found.tool.description == "An invoice, as the model read it."
    assert found.tool.parameters["required"] == ["number", "total"]
    assert not found.wrapped


def test_the_value_is_coerced_as_tool_arguments_are_then_structured() -> None:
    value = spec(Invoice).read(call({"number": 42, "total": "9.5", "paid": "TRUE", "lines": "x"}))
    assert value == Invoice("42", 9.5, True, ["x"])


def test_an_invalid_value_has_the_tool_error_text() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        spec(Invoice).read(call({"total": "lots"}))
    assert str(info.value).startswith(
        'Validation failed for tool "final_result":\n'
        "  - number: missing\n"
        "  - total: expected number, got string\n"
    )


@pytest.mark.parametrize(
    ("output_type", "sent", "expected"),
    [
        (int, "7", 7),
        (list[Point], [{"x": "1", "y": 2}], [Point(1, 2)]),
        (Size, "l", Size.L),
        (Literal["yes", "no"], "yes", "yes"),
        (Point | None, None, None),
        (Annotated[int, "how many"], 3, 3),
    ],
)
def test_other_types_are_wrapped_in_result(output_type: Any, sent: Any, expected: Any) -> None:
    found = spec(output_type)
    assert found.wrapped
    assert found.tool.parameters["required"] == ["result"]
    assert found.read(call({"result": sent})) == expected


def test_a_typed_dict() -> None:
    assert spec(Named).read(call({"name": 5})) == {"name": "5"}


def test_a_json_schema_dict_gives_the_validated_dict() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "pop": {"type": "integer"}},
        "required": ["city", "pop"],
        "additionalProperties": False,
    }
    found = spec(schema)
    assert found.read(call({"city": "Lisbon", "pop": "545000"})) == {
        "city": "Lisbon",
        "pop": 545000,
    }
    with pytest.raises(ToolArgumentsError, match="  - extra: unknown field"):
        found.read(call({"city": "Lisbon", "pop": 1, "extra": True}))


def test_a_dict_that_is_no_json_schema_is_refused() -> None:
    with pytest.raises(TypeError, match="not a valid JSON Schema"):
        OutputSpec.of({"type": "no-such-type"})


def test_a_type_tool_cannot_express_is_refused() -> None:
    with pytest.raises(TypeError):
        OutputSpec.of(object)


def update(*blocks: Any) -> MessageUpdate:
    message = faux_assistant_message(list(blocks))
    return MessageUpdate(message=message, assistant_message_event=None)  # type: ignore[arg-type]


def test_partial_output_reads_the_output_call_so_far() -> None:
    event = update(TextContent("thinking aloud"), call({"number": "4", "lin": None}))
    assert partial_output(event) == {"number": "4", "lin": None}
    assert partial_output(update(TextContent("no call yet"))) is None
    other = ToolCall(id="t", name="lookup", arguments={"q": 1})
    assert partial_output(update(other)) is None


@st.composite
def points(draw: st.DrawFn) -> Point:
    return Point(draw(st.integers()), draw(st.integers()))


@given(
    st.builds(
        Invoice,
        number=st.text(),
        total=st.floats(allow_nan=False, allow_infinity=False),
        paid=st.booleans(),
        lines=st.lists(st.text(), max_size=3),
    )
)
def test_a_value_sent_as_json_comes_back_equal(invoice: Invoice) -> None:
    found = spec(Invoice)
    assert found.read(call(converter.unstructure(invoice))) == invoice


@given(st.lists(points(), max_size=4))
def test_a_wrapped_value_sent_as_json_comes_back_equal(value: list[Point]) -> None:
    found = spec(list[Point])
    assert found.read(call({"result": converter.unstructure(value)})) == value
