"""pi_core.serialization: upstream's camelCase JSON for every data class, and back."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, get_args

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pi_core as pc
import strategies as sts
from pi_core.serialization import (
    dumps,
    from_dict,
    loads,
    register_message,
    to_dict,
    unregister_message,
)

GOLDEN = Path(__file__).parent / "golden"
TS = 1_700_000_000_000


# --- helpers ------------------------------------------------------------------------------------


@attrs.define
class Note:
    """An app-defined message, as an app would declare one."""

    role: ClassVar[str] = "note"
    text: str
    pinned_by: str | None = None
    timestamp: int = 0


@contextmanager
def registered(role: str, cls: type[Any]) -> Iterator[None]:
    register_message(role, cls)
    try:
        yield
    finally:
        unregister_message(role)


async def _execute(*_args: Any) -> str:
    return "done"


def _shape(value: Any) -> Any:
    """JSON data as nested tuples that keep key order and tell booleans from numbers.

    Numbers compare by value, so the TypeScript side's ``0`` matches our ``0.0``.
    """
    if isinstance(value, dict):
        return ("object", [(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("array", [_shape(item) for item in value])
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    return (type(value).__name__, value)


def _keys(data: Any, free_form: frozenset[str]) -> Iterator[str]:
    """Every key of pi_core's own structure, not descending into free-form values."""
    if isinstance(data, dict):
        for key, item in data.items():
            yield key
            if key not in free_form:
                yield from _keys(item, free_form)
    elif isinstance(data, list):
        for item in data:
            yield from _keys(item, free_form)


def _assistant(
    content: list[pc.TextContent | pc.ThinkingContent | pc.ToolCall], **kwargs: Any
) -> pc.AssistantMessage:
    return pc.AssistantMessage(content, "faux", "faux", "faux-1", timestamp=TS, **kwargs)


# --- round trips (hypothesis) -------------------------------------------------------------------

ROUND_TRIPS: dict[type[Any], st.SearchStrategy[Any]] = {
    pc.TextContent: sts.text_contents,
    pc.ThinkingContent: sts.thinking_contents,
    pc.ImageContent: sts.image_contents,
    pc.ToolCall: sts.tool_calls,
    pc.UsageCost: sts.usage_costs,
    pc.Usage: sts.usages,
    pc.UserMessage: sts.user_messages,
    pc.AssistantMessage: sts.assistant_messages,
    pc.ToolResultMessage: sts.tool_result_messages,
    pc.SystemMessage: sts.system_messages,
    pc.ToolReference: sts.tool_references,
    pc.ModelCost: sts.model_costs,
    pc.Model: sts.models,
    pc.Tool: sts.tools,
    pc.Context: sts.contexts,
    pc.AgentContext: sts.agent_contexts,
    pc.AgentToolResult: sts.agent_tool_results,
    **sts.assistant_message_event_strategies,
    **sts.agent_event_strategies,
}


@pytest.mark.parametrize("cls", ROUND_TRIPS, ids=lambda cls: cls.__name__)
@given(data=st.data())
def test_round_trip_by_class(cls: type[Any], data: st.DataObject) -> None:
    obj = data.draw(ROUND_TRIPS[cls])
    assert type(obj) is cls
    assert from_dict(to_dict(obj), cls) == obj
    assert loads(dumps(obj), cls) == obj


def test_every_event_class_is_round_tripped() -> None:
    events = {*get_args(pc.AgentEvent), *get_args(pc.AssistantMessageEvent)}
    assert events <= ROUND_TRIPS.keys()


UNIONS: list[tuple[object, st.SearchStrategy[Any]]] = [
    (pc.Message, sts.messages),
    (pc.AgentMessage, sts.messages),
    (pc.AgentEvent, sts.agent_events),
    (pc.AssistantMessageEvent, sts.assistant_message_events),
    (pc.TextContent | pc.ThinkingContent | pc.ToolCall, sts.assistant_contents),
    (pc.TextContent | pc.ImageContent, sts.tool_result_contents),
]


@pytest.mark.parametrize(
    ("union", "strategy"),
    UNIONS,
    ids=[
        "Message",
        "AgentMessage",
        "AgentEvent",
        "AssistantMessageEvent",
        "AssistantContent",
        "ToolResultContent",
    ],
)
@given(data=st.data())
def test_round_trip_through_union(
    union: object, strategy: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    obj = data.draw(strategy)
    loaded = loads(dumps(obj), union)
    assert type(loaded) is type(obj)
    assert loaded == obj


@given(st.lists(sts.messages, max_size=4))
def test_round_trip_of_a_transcript(transcript: list[pc.Message]) -> None:
    assert loads(dumps(transcript), list[pc.AgentMessage]) == transcript


@given(sts.agent_events)
def test_keys_are_camel_case(event: pc.AgentEvent) -> None:
    # Section names of a system message are the writer's own, like arguments and details.
    free_form = frozenset({"arguments", "details", "args", "parameters", "headers", "sections"})
    assert not [key for key in _keys(to_dict(event), free_form) if "_" in key]


# --- golden files: the exact JSON shape ---------------------------------------------------------

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TOOL_CALL_PARTIAL = _assistant([pc.ToolCall("call_1", "get_weather", {"city": "Par"})])

GOLDEN_OBJECTS: dict[str, tuple[object, Callable[[], object]]] = {
    "user_text": (pc.Message, lambda: pc.UserMessage("What is the weather in Paris?", TS)),
    "user_blocks": (
        pc.Message,
        lambda: pc.UserMessage(
            [
                pc.TextContent("What is in this picture?"),
                pc.ImageContent("iVBORw0KGgo=", "image/png"),
            ],
            TS,
        ),
    ),
    "assistant_tool_use": (
        pc.Message,
        lambda: pc.AssistantMessage(
            [
                pc.ThinkingContent("The user wants the weather.", thinking_signature="sig-think"),
                pc.TextContent("Let me check.", text_signature="sig-text"),
                pc.ToolCall(
                    "call_1",
                    "get_weather",
                    {"city": "Paris", "units": "metric"},
                    thought_signature="sig-call",
                ),
            ],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4",
            usage=pc.Usage(
                120, 45, 30, 0, 195, pc.UsageCost(0.00036, 0.000675, 0.000009, 0, 0.001044)
            ),
            stop_reason="toolUse",
            response_id="msg_01",
            timestamp=TS,
        ),
    ),
    "assistant_error": (
        pc.Message,
        lambda: pc.AssistantMessage(
            [
                pc.ThinkingContent("", thinking_signature="opaque", redacted=True),
                pc.TextContent("Partial answ"),
            ],
            api="openai-completions",
            provider="openai",
            model="gpt-4o",
            stop_reason="error",
            error_message="Connection reset",
            response_model="gpt-4o-2024-08-06",
            timestamp=TS,
        ),
    ),
    "tool_result": (
        pc.Message,
        lambda: pc.ToolResultMessage(
            "call_1",
            "get_weather",
            [pc.TextContent("18 °C and sunny")],
            details={"temperature": 18, "conditions": "sunny"},
            timestamp=TS,
        ),
    ),
    "tool_result_error": (
        pc.Message,
        lambda: pc.ToolResultMessage(
            "call_2",
            "delete_file",
            [pc.TextContent("Tool execution was blocked")],
            is_error=True,
            timestamp=TS,
        ),
    ),
    "model": (
        pc.Model,
        lambda: pc.Model(
            "gpt-4o-mini",
            "GPT-4o mini",
            "openai-completions",
            "openai",
            "https://api.openai.com/v1",
            False,
            ("text", "image"),
            pc.ModelCost(0.15, 0.6, 0.075, 0),
            128000,
            16384,
            {"X-Title": "pi"},
        ),
    ),
    "context": (
        pc.Context,
        lambda: pc.Context(
            "You are helpful.",
            [pc.UserMessage("Hi", TS)],
            [pc.Tool("get_weather", "Get the weather", WEATHER_SCHEMA)],
        ),
    ),
    "event_agent_start": (pc.AgentEvent, pc.AgentStart),
    "event_agent_end": (
        pc.AgentEvent,
        lambda: pc.AgentEnd([pc.UserMessage("Hi", TS), _assistant([pc.TextContent("Hello!")])]),
    ),
    "event_message_update": (
        pc.AgentEvent,
        lambda: pc.MessageUpdate(
            TOOL_CALL_PARTIAL, pc.ToolCallDelta(0, '{"city":"Par', TOOL_CALL_PARTIAL)
        ),
    ),
    "event_tool_execution_start": (
        pc.AgentEvent,
        lambda: pc.ToolExecutionStart("call_1", "get_weather", {"city": "Paris"}),
    ),
    "event_tool_execution_end": (
        pc.AgentEvent,
        lambda: pc.ToolExecutionEnd(
            "call_1",
            "get_weather",
            pc.AgentToolResult([pc.TextContent("18 °C")], {"temperature": 18}, terminate=True),
            is_error=False,
        ),
    ),
    "event_stream_error": (
        pc.AssistantMessageEvent,
        lambda: pc.StreamError(
            "aborted",
            _assistant([], stop_reason="aborted", error_message="Request was aborted"),
        ),
    ),
}


def _golden(name: str) -> Any:
    return json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", GOLDEN_OBJECTS)
def test_golden_shape(name: str) -> None:
    _, make = GOLDEN_OBJECTS[name]
    assert _shape(to_dict(make())) == _shape(_golden(name))
    assert _shape(json.loads(dumps(make()))) == _shape(_golden(name))


@pytest.mark.parametrize("name", GOLDEN_OBJECTS)
def test_golden_loads(name: str) -> None:
    # The golden files hold numbers as JavaScript writes them (0, not 0.0).
    union, make = GOLDEN_OBJECTS[name]
    assert from_dict(_golden(name), union) == make()


def test_golden_files_are_all_used() -> None:
    names = {path.stem for path in GOLDEN.glob("*.json")}
    assert names == {*GOLDEN_OBJECTS, "agent_context"}


# --- keys and omission ----------------------------------------------------------------------------

FULL_KEY_SETS: list[tuple[object, set[str]]] = [
    (pc.TextContent("t", "s"), {"type", "text", "textSignature"}),
    (
        pc.ThinkingContent("t", "s", redacted=True),
        {"type", "thinking", "thinkingSignature", "redacted"},
    ),
    (pc.ImageContent("d", "image/png"), {"type", "data", "mimeType"}),
    (pc.ToolCall("i", "n", {}, "s"), {"type", "id", "name", "arguments", "thoughtSignature"}),
    (pc.UsageCost(), {"input", "output", "cacheRead", "cacheWrite", "total"}),
    (pc.Usage(), {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}),
    (pc.UserMessage("x"), {"role", "content", "timestamp"}),
    (
        _assistant([], error_message="e", response_id="r", response_model="m"),
        {
            "role",
            "content",
            "api",
            "provider",
            "model",
            "usage",
            "stopReason",
            "errorMessage",
            "responseId",
            "responseModel",
            "timestamp",
        },
    ),
    (
        pc.ToolResultMessage("i", "n", [], details=1),
        {"role", "toolCallId", "toolName", "content", "details", "isError", "timestamp"},
    ),
    (pc.ModelCost(), {"input", "output", "cacheRead", "cacheWrite"}),
    (
        pc.Model("m", headers={}),
        {
            "id",
            "name",
            "api",
            "provider",
            "baseUrl",
            "reasoning",
            "input",
            "cost",
            "contextWindow",
            "maxTokens",
            "headers",
        },
    ),
    (pc.Tool("n", "d", {}), {"name", "description", "parameters"}),
    (pc.Context("s"), {"systemPrompt", "messages", "tools"}),
    (pc.AgentContext(), {"systemPrompt", "messages", "tools"}),
    (pc.AgentToolResult([], 1, terminate=True), {"content", "details", "terminate"}),
    (pc.TextEnd(0, "c", _assistant([])), {"type", "contentIndex", "content", "partial"}),
    (
        pc.ToolCallEnd(0, pc.ToolCall("i", "n", {}), _assistant([])),
        {"type", "contentIndex", "toolCall", "partial"},
    ),
    (pc.StreamDone("stop", _assistant([])), {"type", "reason", "message"}),
    (pc.StreamError("error", _assistant([])), {"type", "reason", "error"}),
    (pc.TurnEnd(_assistant([]), []), {"type", "message", "toolResults"}),
    (
        pc.MessageUpdate(_assistant([]), pc.StreamStart(_assistant([]))),
        {"type", "message", "assistantMessageEvent"},
    ),
    (
        pc.ToolExecutionUpdate("i", "n", {}, pc.AgentToolResult([])),
        {"type", "toolCallId", "toolName", "args", "partialResult"},
    ),
    (
        pc.ToolExecutionEnd("i", "n", pc.AgentToolResult([]), True),
        {"type", "toolCallId", "toolName", "result", "isError"},
    ),
]


@pytest.mark.parametrize(
    ("obj", "keys"), FULL_KEY_SETS, ids=[type(obj).__name__ for obj, _ in FULL_KEY_SETS]
)
def test_upstream_key_set(obj: object, keys: set[str]) -> None:
    assert set(to_dict(obj)) == keys


UNSET_OPTIONALS: list[tuple[object, set[str]]] = [
    (pc.TextContent("t"), {"textSignature"}),
    (pc.ThinkingContent("t"), {"thinkingSignature", "redacted"}),
    (pc.ToolCall("i", "n", {}), {"thoughtSignature"}),
    (_assistant([]), {"errorMessage", "responseId", "responseModel"}),
    (pc.ToolResultMessage("i", "n", []), {"details"}),
    (pc.Model("m"), {"headers"}),
    (pc.Context(), {"systemPrompt"}),
    (pc.AgentToolResult([]), {"details", "terminate"}),
]


@pytest.mark.parametrize(
    ("obj", "absent"), UNSET_OPTIONALS, ids=[type(obj).__name__ for obj, _ in UNSET_OPTIONALS]
)
def test_unset_optional_fields_are_left_out(obj: object, absent: set[str]) -> None:
    assert not absent & set(to_dict(obj))


def test_required_flags_and_falsy_values_are_written() -> None:
    result = to_dict(pc.ToolResultMessage("i", "n", [], details=0))
    assert result["isError"] is False
    assert result["details"] == 0
    assert to_dict(pc.Model("m"))["reasoning"] is False
    assert to_dict(pc.AgentContext())["systemPrompt"] == ""
    assert to_dict(pc.ToolResultMessage("i", "n", [], details={}))["details"] == {}


def test_missing_optional_keys_load_as_defaults() -> None:
    data = {"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m"}
    message = from_dict(data, pc.AssistantMessage)
    assert message.usage == pc.Usage()
    assert message.stop_reason == "stop"
    assert message.error_message is None
    assert from_dict({"id": "m"}, pc.Model) == pc.Model("m")


# --- numbers --------------------------------------------------------------------------------------


def test_integers_load_into_float_fields_as_floats() -> None:
    cost = from_dict({"input": 0, "output": 3, "total": 2.5}, pc.UsageCost)
    assert cost == pc.UsageCost(0.0, 3.0, total=2.5)
    assert type(cost.input) is float
    assert type(cost.output) is float


def test_integral_floats_load_into_int_fields_as_ints() -> None:
    usage = from_dict({"input": 1.0, "totalTokens": 12.0}, pc.Usage)
    assert usage.input == 1
    assert type(usage.input) is int
    assert type(usage.total_tokens) is int
    assert type(loads('{"role":"user","content":"x","timestamp":5.0}', pc.Message).timestamp) is int


@pytest.mark.parametrize("value", [1.5, "1", True, None, [1]])
def test_a_non_integer_in_an_int_field_is_an_error(value: object) -> None:
    with pytest.raises(ValueError, match=r"expected an integer, got .* @ \$\.input"):
        from_dict({"input": value}, pc.Usage)


def test_non_finite_floats_are_written_as_null_and_read_as_nan() -> None:
    text = dumps(pc.UsageCost(total=math.inf, input=math.nan))
    assert json.loads(text) == {
        "input": None,
        "output": 0.0,
        "cacheRead": 0.0,
        "cacheWrite": 0.0,
        "total": None,
    }
    assert math.isnan(loads(text, pc.UsageCost).total)


def test_model_input_is_a_list_in_json_and_a_tuple_in_python() -> None:
    data = to_dict(pc.Model("m", input=("text", "image")))
    assert data["input"] == ["text", "image"]
    assert from_dict(data, pc.Model).input == ("text", "image")


# --- dispatch by role and type --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        ({"role": "user", "content": "x"}, pc.UserMessage),
        (
            {"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m"},
            pc.AssistantMessage,
        ),
        (
            {"role": "toolResult", "toolCallId": "i", "toolName": "n", "content": []},
            pc.ToolResultMessage,
        ),
    ],
)
def test_messages_load_by_role(data: dict[str, Any], cls: type[Any]) -> None:
    assert type(from_dict(data, pc.Message)) is cls
    assert type(from_dict(data, pc.AgentMessage)) is cls


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        ({"type": "agent_start"}, pc.AgentStart),
        ({"type": "turn_start"}, pc.TurnStart),
        ({"type": "agent_end", "messages": []}, pc.AgentEnd),
        (
            {"type": "tool_execution_start", "toolCallId": "i", "toolName": "n", "args": None},
            pc.ToolExecutionStart,
        ),
    ],
)
def test_agent_events_load_by_type(data: dict[str, Any], cls: type[Any]) -> None:
    assert type(from_dict(data, pc.AgentEvent)) is cls


def test_assistant_message_events_load_by_type() -> None:
    partial = to_dict(_assistant([]))
    for type_, cls in [("text_start", pc.TextStart), ("thinking_start", pc.ThinkingStart)]:
        event = from_dict(
            {"type": type_, "contentIndex": 2, "partial": partial}, pc.AssistantMessageEvent
        )
        assert event == cls(2, _assistant([]))


def test_content_blocks_load_by_type() -> None:
    data = {"role": "user", "content": [{"type": "image", "data": "d", "mimeType": "m"}]}
    assert from_dict(data, pc.UserMessage).content == [pc.ImageContent("d", "m")]


@pytest.mark.parametrize(
    ("data", "cls", "pattern"),
    [
        ({"role": "developer", "content": "x"}, pc.Message, "unknown message role 'developer'"),
        ({"role": "developer", "content": "x"}, pc.AgentMessage, "unknown message role 'devel"),
        ({"type": "agent_pause"}, pc.AgentEvent, "unknown type 'agent_pause'"),
        ({"type": "text_middle"}, pc.AssistantMessageEvent, "unknown type 'text_middle'"),
        ({"content": "x"}, pc.Message, "'role'"),
        (
            {
                "role": "toolResult",
                "toolCallId": "i",
                "toolName": "n",
                "content": [{"type": "thinking", "thinking": ""}],
            },
            pc.Message,
            r"unknown type 'thinking' .* @ \$\.content\[0\]",
        ),
        (
            {"type": "agent_end", "messages": [{"role": "note"}]},
            pc.AgentEvent,
            r"unknown message role 'note'.* @ \$\.messages\[0\]",
        ),
    ],
)
def test_unknown_role_or_type_is_a_clear_error(data: object, cls: object, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        from_dict(data, cls)


@pytest.mark.parametrize(
    ("data", "cls", "pattern"),
    [
        ("hello", pc.TextContent, r"expected an object for TextContent"),
        ({"type": "text"}, pc.TextContent, r"required field missing @ \$\.text"),
        ({"text": 5}, pc.TextContent, r"expected a string, got 5 @ \$\.text"),
        (
            {"role": "user", "content": 5},
            pc.UserMessage,
            r"expected a string or a list, got 5 @ \$\.content",
        ),
        ({"id": "i", "name": "n", "arguments": [1]}, pc.ToolCall, r"@ \$\.arguments"),
        (
            {
                "role": "assistant",
                "content": [],
                "api": "a",
                "provider": "p",
                "model": "m",
                "stopReason": "done",
            },
            pc.AssistantMessage,
            r"expected one of 'stop'.*got 'done' @ \$\.stopReason",
        ),
        (
            {"id": "m", "reasoning": "yes"},
            pc.Model,
            r"expected a boolean, got .yes. @ \$\.reasoning",
        ),
        (
            [{"role": "user"}],
            list[pc.Message],
            r"Cannot load list\[SystemMessage \| .* @ \$\[0\]\.content",
        ),
    ],
)
def test_malformed_data_is_a_value_error_with_a_path(
    data: object, cls: object, pattern: str
) -> None:
    with pytest.raises(ValueError, match=pattern):
        from_dict(data, cls)


def test_every_problem_is_listed() -> None:
    with pytest.raises(ValueError, match=r"\$\.input; .* @ \$\.cost\.total$"):
        from_dict({"input": "1", "cost": {"total": "2"}}, pc.Usage)


def test_unknown_keys_are_kept_and_written_back() -> None:
    # Later upstream versions add fields (diagnostics, thinkingLevelMap, compat ...).
    data = to_dict(_assistant([])) | {"diagnostics": [{"type": "x", "timestamp": 1}]}
    message = from_dict(data, pc.AssistantMessage)
    assert message.extra == {"diagnostics": [{"type": "x", "timestamp": 1}]}
    assert to_dict(message) == data


def test_invalid_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Cannot load Message: invalid JSON"):
        loads('{"role": "user"', pc.Message)


@pytest.mark.parametrize(
    "load",
    [
        lambda: loads('{"role": "user"', pc.Message),
        lambda: from_dict({"role": "nobody"}, pc.Message),
    ],
)
def test_data_that_does_not_load_is_a_serialization_error(load: Callable[[], object]) -> None:
    with pytest.raises(pc.SerializationError, match="Cannot load Message") as excinfo:
        load()
    assert isinstance(excinfo.value, pc.PiCoreError)
    assert isinstance(excinfo.value, ValueError)


# --- tools and contexts ---------------------------------------------------------------------------


def _weather_tool(**kwargs: Any) -> pc.AgentTool:
    return pc.AgentTool("get_weather", "Get the weather", WEATHER_SCHEMA, _execute, **kwargs)


def test_agent_tool_is_written_as_upstream_proxy_writes_it() -> None:
    tool = _weather_tool(label="Weather", execution_mode="sequential", timeout=5)
    context = pc.AgentContext("You are helpful.", [pc.UserMessage("Hi", TS)], [tool])
    assert _shape(to_dict(context)) == _shape(_golden("agent_context"))
    assert to_dict(_weather_tool()) == {
        "name": "get_weather",
        "description": "Get the weather",
        "parameters": WEATHER_SCHEMA,
        "label": "get_weather",
    }


def test_agent_tools_load_back_as_plain_tools() -> None:
    # The documented exception to the round trip: functions cannot come back from JSON.
    context = pc.AgentContext("s", [], [_weather_tool(label="Weather")])
    loaded = loads(dumps(context), pc.AgentContext)
    # What the Tool does not model is kept as it was written.
    expected = pc.Tool("get_weather", "Get the weather", WEATHER_SCHEMA, extra={"label": "Weather"})
    assert loaded.tools == [expected]
    assert type(loaded.tools[0]) is pc.Tool


def test_agent_tools_in_a_context_keep_their_label() -> None:
    # The loop hands AgentTools to the stream function in a Context; the proxy sends them so.
    written = to_dict(pc.Context(None, [], [_weather_tool(execution_mode="parallel")]))
    assert written["tools"][0]["label"] == "get_weather"
    assert written["tools"][0]["executionMode"] == "parallel"


def test_an_agent_tool_cannot_be_loaded() -> None:
    with pytest.raises(TypeError, match="load a Tool"):
        from_dict(to_dict(_weather_tool()), pc.AgentTool)


# --- custom messages ------------------------------------------------------------------------------


def test_a_registered_custom_message_round_trips() -> None:
    note = Note("remember the milk", pinned_by="alice", timestamp=TS)
    context = pc.AgentContext("s", [pc.UserMessage("Hi", TS), note])
    with registered("note", Note):
        assert to_dict(note) == {
            "role": "note",
            "text": "remember the milk",
            "pinnedBy": "alice",
            "timestamp": TS,
        }
        assert loads(dumps(context), pc.AgentContext) == context
        assert loads(dumps(pc.MessageEnd(note)), pc.AgentEvent) == pc.MessageEnd(note)
        assert from_dict(to_dict(note), Note) == note


def test_registering_after_first_use_takes_effect() -> None:
    # This first call generates (and caches) the hooks of AgentEnd and its message list.
    dumps(pc.AgentEnd([pc.UserMessage("x", TS)]))
    with registered("note", Note):
        event = pc.AgentEnd([Note("x"), pc.UserMessage("y", TS)])
        assert loads(dumps(event), pc.AgentEvent) == event


def test_an_unregistered_custom_message_does_not_load() -> None:
    with registered("note", Note):
        text = dumps(pc.AgentEnd([Note("x")]))
    with pytest.raises(ValueError, match=r"unknown message role 'note' \(custom roles need"):
        loads(text, pc.AgentEvent)


def test_custom_messages_never_load_as_llm_messages() -> None:
    with registered("note", Note), pytest.raises(ValueError, match="unknown message role 'note'"):
        from_dict(to_dict(Note("x")), pc.Message)


def test_registering_a_role_again_replaces_its_class() -> None:
    @attrs.define
    class Note2:
        role: ClassVar[str] = "note"
        body: str

    with registered("note", Note):
        register_message("note", Note2)
        assert from_dict({"role": "note", "body": "b"}, pc.AgentMessage) == Note2("b")
    unregister_message("note")  # unknown roles are ignored


def test_register_message_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="built in"):
        register_message("user", Note)
    with pytest.raises(ValueError, match="role = 'memo'"):
        register_message("memo", Note)
    with pytest.raises(TypeError, match="attrs class"):
        register_message("note", dict)


def test_a_custom_message_that_is_not_attrs_cannot_be_written() -> None:
    class Loose:
        role = "loose"

    with pytest.raises(TypeError, match=r"custom message Loose \(role 'loose'\)"):
        to_dict(pc.AgentEnd([Loose()]))


# --- text -------------------------------------------------------------------------------------------


def test_dumps_is_compact_and_keeps_non_ascii() -> None:
    assert (
        dumps(pc.UserMessage("héllo ✓", 1)) == '{"role":"user","content":"héllo ✓","timestamp":1}'
    )


def test_loads_accepts_bytes() -> None:
    assert loads(b'{"role":"user","content":"x","timestamp":1}', pc.Message) == pc.UserMessage(
        "x", 1
    )


def test_to_dict_needs_a_data_object() -> None:
    with pytest.raises(TypeError, match="not list"):
        to_dict([pc.UserMessage("x")])


def test_to_dict_copies_free_form_values() -> None:
    arguments = {"items": [1, 2]}
    written = to_dict(pc.ToolCall("i", "n", arguments))
    written["arguments"]["items"].append(3)
    assert arguments == {"items": [1, 2]}
