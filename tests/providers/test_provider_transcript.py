"""The transcript preparation shared by the HTTP providers: never an unanswered tool call."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from pi_core import (
    AssistantMessage,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_core.providers._transcript import NO_RESULT_TEXT, prepare_transcript
from pi_core.testing import check_transcript

MODEL = Model("m-1", api="api-x", provider="prov")


def assistant(
    *content: TextContent | ThinkingContent | ToolCall,
    stop: StopReason = "toolUse",
    model: str = "m-1",
) -> AssistantMessage:
    return AssistantMessage(list(content), "api-x", "prov", model, stop_reason=stop)


def result(call_id: str, text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(call_id, "tool", [TextContent(text)])


def answers(messages: Sequence[Message]) -> list[tuple[str, str, bool]]:
    """``(call id, text, is_error)`` of each toolResult message (timestamps differ)."""
    return [
        (message.tool_call_id, message.content[0].text, message.is_error)
        for message in messages
        if isinstance(message, ToolResultMessage) and isinstance(message.content[0], TextContent)
    ]


def test_missing_results_are_synthesized_in_call_order() -> None:
    calls = assistant(
        ToolCall("a", "tool", {}), ToolCall("b", "tool", {}), ToolCall("c", "tool", {})
    )
    prepared = prepare_transcript(
        [UserMessage("go"), calls, result("c"), result("a"), UserMessage("next")], MODEL
    )
    assert [message.role for message in prepared] == [
        "user",
        "assistant",
        *["toolResult"] * 3,
        "user",
    ]
    assert answers(prepared) == [
        ("a", "ok", False),
        ("b", NO_RESULT_TEXT, True),
        ("c", "ok", False),
    ]


def test_calls_at_the_end_are_answered() -> None:
    prepared = prepare_transcript([UserMessage("go"), assistant(ToolCall("a", "tool", {}))], MODEL)
    assert answers(prepared[2:]) == [("a", NO_RESULT_TEXT, True)]


def test_failed_and_aborted_messages_are_skipped_with_their_results() -> None:
    for stop in ("error", "aborted"):
        failed = assistant(TextContent("half"), ToolCall("x", "tool", {}), stop=stop)
        prepared = prepare_transcript(
            [UserMessage("go"), failed, result("x"), UserMessage("again")], MODEL
        )
        assert [message.role for message in prepared] == ["user", "user"]


def test_orphan_duplicate_and_late_results_are_dropped() -> None:
    calls = assistant(ToolCall("a", "tool", {}))
    messages: list[Message] = [
        result("nobody"),
        UserMessage("go"),
        calls,
        result("a", "first"),
        result("a", "second"),
        UserMessage("next"),
        result("a", "late"),
    ]
    prepared = prepare_transcript(messages, MODEL)
    assert [message.role for message in prepared] == ["user", "assistant", "toolResult", "user"]
    answer = prepared[2]
    assert isinstance(answer, ToolResultMessage)
    assert answer.content == [TextContent("first")]


def test_thinking_of_other_models() -> None:
    own = assistant(
        ThinkingContent("mine", "sig"), ThinkingContent("[r]", "enc", redacted=True), stop="stop"
    )
    other = assistant(
        ThinkingContent("theirs", "sig"),
        ThinkingContent("   "),
        ThinkingContent("[r]", "enc", redacted=True),
        ToolCall("t", "tool", {}, thought_signature="ts"),
        model="m-2",
    )
    prepared = prepare_transcript([own, other, result("t")], MODEL)
    assert prepared[0] == own
    converted = prepared[1]
    assert isinstance(converted, AssistantMessage)
    # Another model's reasoning is dropped, not passed off as text the model wrote.
    assert converted.content == [ToolCall("t", "tool", {})]


def test_ids_are_normalized_in_calls_and_results_without_touching_the_input() -> None:
    calls = assistant(ToolCall("call|1", "tool", {}))
    answer = result("call|1")
    prepared = prepare_transcript([calls, answer], MODEL, lambda value: value.replace("|", "_"))
    converted, converted_answer = prepared
    assert isinstance(converted, AssistantMessage)
    assert isinstance(converted_answer, ToolResultMessage)
    assert converted.content == [ToolCall("call_1", "tool", {})]
    assert converted_answer.tool_call_id == "call_1"
    assert calls.content == [ToolCall("call|1", "tool", {})]
    assert answer.tool_call_id == "call|1"


def test_a_models_own_ids_go_back_as_they_came() -> None:
    own = assistant(ToolCall("call|1", "tool", {}))
    other = assistant(ToolCall("call|2", "tool", {}), model="m-2")
    messages: list[Message] = [own, result("call|1"), other, result("call|2")]
    prepared = prepare_transcript(messages, MODEL, lambda value: value + "!", keep_own_ids=True)
    assert answers(prepared) == [("call|1", "ok", False), ("call|2!", "ok", False)]
    assert prepared[0] == own


# --- the invariant, for any transcript --------------------------------------------------------

_IDS = st.sampled_from(["a", "b", "c", "d"])
_STOPS: st.SearchStrategy[StopReason] = st.sampled_from(
    ["stop", "toolUse", "length", "error", "aborted"]
)


@st.composite
def _assistants(draw: st.DrawFn) -> AssistantMessage:
    ids = draw(st.lists(_IDS, max_size=3, unique=True))
    calls = [ToolCall(call_id, "tool", {}) for call_id in ids]
    return assistant(
        TextContent("t"), *calls, stop=draw(_STOPS), model=draw(st.sampled_from(["m-1", "m-2"]))
    )


_MESSAGES: st.SearchStrategy[Message] = st.one_of(
    st.builds(UserMessage, st.just("u")),
    _assistants(),
    st.builds(result, _IDS),
)


@given(st.lists(_MESSAGES, max_size=12))
def test_every_call_has_exactly_one_result(messages: list[Message]) -> None:
    before = copy.deepcopy(messages)
    prepared = prepare_transcript(messages, MODEL)
    check_transcript(prepared)
    assert all(
        message.stop_reason not in ("error", "aborted")
        for message in prepared
        if isinstance(message, AssistantMessage)
    )
    assert messages == before
