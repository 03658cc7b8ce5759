"""A property of typed output through whole runs: for generated attrs and dataclass types and
generated values of them, the value the model sends as JSON (streamed, in pieces) comes back
equal as ``RunResult.output``."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_core import Agent, ToolCall
from pi_core._tool_schema import converter
from pi_core.testing import ScriptedStream, scripted_reply

pytestmark = pytest.mark.anyio

PROPERTY = settings(
    max_examples=40,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_FIELD_KINDS: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (str, st.text(max_size=12)),
    (int, st.integers(min_value=-(2**53), max_value=2**53)),
    (float, st.floats(allow_nan=False, allow_infinity=False)),
    (bool, st.booleans()),
    (list[str], st.lists(st.text(max_size=5), max_size=3)),
    (list[int], st.lists(st.integers(min_value=-1000, max_value=1000), max_size=3)),
]


@st.composite
def typed_values(draw: st.DrawFn) -> tuple[type, Any]:
    """A fresh attrs or dataclass type of a few fields of the kinds above, and a value of it."""
    kinds = draw(st.lists(st.sampled_from(range(len(_FIELD_KINDS))), min_size=1, max_size=5))
    names = [f"field_{i}" for i in range(len(kinds))]
    types = [_FIELD_KINDS[kind][0] for kind in kinds]
    if draw(st.booleans()):
        made: type = attrs.make_class(
            "Generated",
            {n: attrs.field(type=t) for n, t in zip(names, types, strict=True)},
            frozen=True,
        )
    else:
        made = dataclasses.make_dataclass(
            "Generated", list(zip(names, types, strict=True)), frozen=True
        )
    values = [draw(_FIELD_KINDS[kind][1]) for kind in kinds]
    return made, made(*values)


@PROPERTY
@given(typed_values(), st.integers(min_value=1, max_value=7))
async def test_a_value_sent_as_json_comes_back_equal_as_the_runs_output(
    typed: tuple[type, Any], chunk_size: int
) -> None:
    output_type, value = typed
    sent = json.loads(json.dumps(converter.unstructure(value)))  # what travels over the wire
    stream = ScriptedStream(
        [scripted_reply(ToolCall("out", "final_result", sent))], chunk_size=chunk_size
    )
    agent = Agent(model=stream.model, stream_fn=stream, output_type=output_type)
    with anyio.fail_after(10):
        result = await agent.prompt("Answer.")
    assert result.ok, result.error_message
    assert result.output == value
    assert type(result.output) is output_type
