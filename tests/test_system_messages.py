"""System messages: the type, its JSON, and replaying the prompt and tools a transcript declares."""

from __future__ import annotations

import json
from typing import Any

import pytest

import pi_core as pc
from pi_core.lowlevel import (
    collapse_system_messages,
    current_system_message,
    declaration,
    initial_system_message,
    provider_transcript,
    render_system_update,
    system_message_text,
)
from pi_core.serialization import from_dict, loads, to_dict

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"v": {"type": "string"}}}


def _tool(name: str, description: str = "d") -> pc.Tool:
    return pc.Tool(name, description, SCHEMA)


def _user(text: str) -> pc.UserMessage:
    return pc.UserMessage(text, timestamp=1)


# --- the type -----------------------------------------------------------------------------------


def test_empty_tool_lists_are_none() -> None:
    message = pc.SystemMessage("x", tools_added=[], tools_removed=[])
    assert message.tools_added is None
    assert message.tools_removed is None
    assert message.role == "system"


def test_json_is_upstreams_shape() -> None:
    message = pc.SystemMessage(
        "SYS",
        {"rules": "be brief"},
        [_tool("t1")],
        [pc.ToolReference("t0")],
        timestamp=0,
    )
    assert to_dict(message) == {
        "role": "system",
        "content": "SYS",
        "timestamp": 0,
        "sections": {"rules": "be brief"},
        "toolsAdded": [{"name": "t1", "description": "d", "parameters": SCHEMA}],
        "toolsRemoved": [{"name": "t0"}],
    }
    assert from_dict(to_dict(message), pc.AgentMessage) == message


def test_a_section_of_an_unknown_value_type_is_a_clear_error() -> None:
    data = {"role": "system", "content": "", "sections": {"rules": 5}, "timestamp": 0}
    with pytest.raises(pc.SerializationError, match=r"expected a string, got 5 @ \$\.sections"):
        from_dict(data, pc.Message)


def test_a_transcript_mixing_both_versions_loads_and_writes_back() -> None:
    # An old writer's messages (no system message, no new fields) followed by a new writer's
    # (a system message, the new fields, and a key pi_core does not model).
    text = """[
      {"role": "user", "content": "hi", "timestamp": 1},
      {"role": "assistant", "content": [{"type": "text", "text": "yo"}], "api": "a",
       "provider": "p", "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0,
       "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
       "cacheWrite": 0, "total": 0}}, "stopReason": "stop", "timestamp": 2},
      {"role": "system", "content": "", "toolsAdded": [{"name": "ls", "description": "list",
       "parameters": {"type": "object"}}], "timestamp": 3},
      {"role": "user", "content": [{"type": "text", "text": "go"}], "timestamp": 4},
      {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "ls",
       "arguments": {}, "argumentsError": "Unexpected token"}], "api": "a", "provider": "p",
       "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
       "totalTokens": 2, "reasoning": 1, "cacheWrite1h": 0, "cost": {"input": 0, "output": 0,
       "cacheRead": 0, "cacheWrite": 0, "total": 0, "totalFromProvider": true}},
       "stopReason": "toolUse", "timestamp": 5, "thinkingLevel": "max", "durationMs": 12,
       "rawStopReason": "tool_calls", "endTurn": true},
      {"role": "toolResult", "toolCallId": "c", "toolName": "ls", "content": [],
       "isError": false, "timestamp": 6, "durationMs": 3}
    ]"""
    data = json.loads(text)
    messages = loads(text, list[pc.AgentMessage])
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "system",
        "user",
        "assistant",
        "toolResult",
    ]
    reply = messages[4]
    assert isinstance(reply, pc.AssistantMessage)
    assert reply.thinking_level == "max"
    assert reply.extra == {"endTurn": True}
    call = reply.content[0]
    assert isinstance(call, pc.ToolCall) and call.arguments_error == "Unexpected token"
    assert pc.current_tools(messages) == [pc.Tool("ls", "list", {"type": "object"})]
    assert [to_dict(m) for m in messages] == data


# --- replay -------------------------------------------------------------------------------------


def _transcript() -> list[pc.AgentMessage]:
    return [
        pc.SystemMessage("BASE", {"a": "A1", "b": "B"}, [_tool("t1"), _tool("t2")], timestamp=0),
        _user("one"),
        pc.SystemMessage("MORE", {"a": "A2", "b": None}, tools_removed=[pc.ToolReference("t1")]),
        _user("two"),
        pc.SystemMessage(
            "",
            {"c": "C"},
            tools_added=[_tool("t2", "new"), _tool("t3")],
            tools_removed=[pc.ToolReference("t2")],
        ),
    ]


def test_the_prompt_joins_contents_then_sections() -> None:
    assert pc.current_system_prompt(_transcript()) == "BASE\n\nMORE\n\nA2\n\nC"


def test_tools_are_removed_then_added_message_by_message() -> None:
    assert pc.current_tools(_transcript()) == [_tool("t2", "new"), _tool("t3")]


def test_a_transcript_without_system_messages_declares_nothing() -> None:
    assert pc.current_system_prompt([_user("x")]) == ""
    assert pc.current_tools([_user("x")]) == []
    assert current_system_message([_user("x")]) is None


def test_the_replayed_state_is_one_message() -> None:
    state = current_system_message(_transcript())
    assert state == pc.SystemMessage(
        "BASE\n\nMORE", {"a": "A2", "c": "C"}, [_tool("t2", "new"), _tool("t3")], timestamp=0
    )
    assert state is not None and system_message_text(state) == "BASE\n\nMORE\n\nA2\n\nC"


def test_collapsing_puts_the_replayed_state_first() -> None:
    collapsed = collapse_system_messages(_transcript())  # type: ignore[arg-type]
    assert [m.role for m in collapsed] == ["system", "user", "user"]
    assert collapsed[0] == current_system_message(_transcript())


def test_a_later_message_renders_its_changes() -> None:
    update = pc.SystemMessage("Be terse.", {"rules": "none", "old": None})
    assert render_system_update(update) == (
        'Be terse.\n\nUpdated system prompt section "rules":\n\nnone\n\n'
        'Removed system prompt section "old".'
    )


def test_content_blocks_count_as_text() -> None:
    message = pc.SystemMessage([pc.TextContent("a"), pc.TextContent("b")], {"s": "c"})
    assert system_message_text(message) == "a\n\nb\n\nc"


# --- contexts and providers ---------------------------------------------------------------------


def test_normalize_context_folds_the_shorthand_into_a_leading_message() -> None:
    context = pc.Context("SYS", [_user("hi")], [_tool("t1")])
    normalized = pc.normalize_context(context)
    assert normalized.system_prompt is None and normalized.tools == []
    assert normalized.messages == [
        pc.SystemMessage("SYS", tools_added=[_tool("t1")], timestamp=0),
        _user("hi"),
    ]


def test_a_context_without_shorthand_is_already_normal() -> None:
    context = pc.Context(None, [_user("hi")])
    assert pc.normalize_context(context) is context


def test_a_provider_gets_one_prompt_and_the_declared_tools() -> None:
    context = pc.Context(None, _transcript())  # type: ignore[arg-type]
    transcript = provider_transcript(context)
    assert transcript.system_prompt == "BASE\n\nMORE\n\nA2\n\nC"
    assert transcript.tools == [_tool("t2", "new"), _tool("t3")]
    assert [m.role for m in transcript.messages] == ["user", "user"]


def test_a_provider_that_takes_system_messages_mid_way_keeps_them_in_place() -> None:
    context = pc.Context(None, _transcript())  # type: ignore[arg-type]
    transcript = provider_transcript(context, mid_conversation=True)
    assert transcript.system_prompt == "BASE\n\nA1\n\nB"
    assert [m.role for m in transcript.messages] == ["user", "system", "user", "system"]


def test_the_old_shorthand_reaches_a_provider_too() -> None:
    transcript = provider_transcript(pc.Context("SYS", [_user("hi")], [_tool("t1")]))
    assert (transcript.system_prompt, transcript.tools) == ("SYS", [_tool("t1")])
    assert transcript.messages == [_user("hi")]


def test_a_declaration_drops_what_only_runs_the_tool() -> None:
    async def execute(*_: object) -> str:
        return ""

    agent_tool = pc.AgentTool("t", "d", SCHEMA, execute, label="T")
    assert type(declaration(agent_tool)) is pc.Tool
    assert declaration(agent_tool) == pc.Tool("t", "d", SCHEMA)
    loaded = pc.Tool("t", "d", SCHEMA, extra={"label": "T", "constrainedSampling": False})
    assert declaration(loaded).extra == {"constrainedSampling": False}


def test_no_prompt_and_no_tools_make_no_leading_message() -> None:
    assert initial_system_message("", []) is None
    assert initial_system_message("", [_tool("t")]) == pc.SystemMessage(
        "", tools_added=[_tool("t")], timestamp=0
    )
