"""Checks that a sequence of agent events is a well-formed run, and a transcript a valid one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import AgentEvent
from .._messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage

__all__ = ["EventGrammarError", "TranscriptError", "check_event_grammar", "check_transcript"]


class EventGrammarError(AssertionError):
    """A sequence of agent events breaks the grammar of a run; the message says where and why."""


class TranscriptError(AssertionError):
    """A transcript has a tool call without exactly one result, or results out of order."""


def check_event_grammar(events: Sequence[AgentEvent]) -> None:
    """Raise :class:`EventGrammarError` unless ``events`` is one well-formed run.

    The grammar: ``agent_start``, then turns bracketed by ``turn_start`` / ``turn_end``, then
    ``agent_end`` and nothing after it. Messages are bracketed by ``message_start`` /
    ``message_end`` one at a time (the same object for both, except the assistant's streamed
    snapshots); ``message_update`` comes only inside an assistant message. Every tool call of a
    turn's assistant message (unless it stopped with ``error`` / ``aborted``) is started once and
    ended once, its updates in between, and its toolResult message comes after its end; the
    toolResult messages and ``turn_end.tool_results`` follow the calls' source order.
    ``agent_end.messages`` are messages ended during the run, in order.
    """
    _Grammar(events).check()


def check_transcript(messages: Sequence[AgentMessage]) -> None:
    """Raise :class:`TranscriptError` unless every tool call of a completed assistant message has
    exactly one toolResult message, in the calls' order, right after it (other messages such as
    steering may follow the results)."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if not isinstance(message, AssistantMessage):
            if isinstance(message, ToolResultMessage):
                raise TranscriptError(
                    f"message {index - 1}: toolResult {message.tool_call_id!r} answers no call"
                )
            continue
        calls = _tool_calls(message)
        if message.stop_reason in ("error", "aborted"):
            continue
        for call in calls:
            result = messages[index] if index < len(messages) else None
            if not isinstance(result, ToolResultMessage) or result.tool_call_id != call.id:
                raise TranscriptError(
                    f"message {index}: expected the toolResult of call {call.id!r} "
                    f"({call.name}), found {_describe_message(result)}"
                )
            index += 1


def _tool_calls(message: AssistantMessage) -> list[ToolCall]:
    return [block for block in message.content if isinstance(block, ToolCall)]


def _describe_message(message: object) -> str:
    if message is None:
        return "the end of the transcript"
    role = getattr(message, "role", type(message).__name__)
    if isinstance(message, ToolResultMessage):
        return f"toolResult {message.tool_call_id!r}"
    return str(role)


def _describe(event: Any) -> str:
    kind = event.type
    if kind.startswith("tool_execution"):
        return f"{kind}({event.tool_call_id!r})"
    if kind.startswith("message"):
        return f"{kind}({event.message.role})"
    return str(kind)


class _Grammar:
    """A single pass over the events with the state of the open brackets."""

    def __init__(self, events: Sequence[AgentEvent]) -> None:
        self.events = events
        self.index = 0
        self.in_turn = False
        self.open_message: Any = None
        self.turn_messages: list[Any] = []
        self.ended_messages: list[Any] = []
        self.started_tools: dict[str, str] = {}
        self.ended_tools: set[str] = set()
        self.results_seen: list[str] = []

    def fail(self, expected: str) -> None:
        event = self.events[self.index] if self.index < len(self.events) else None
        found = _describe(event) if event is not None else "the end of the events"
        raise EventGrammarError(f"event {self.index}: expected {expected}, found {found}")

    def check(self) -> None:
        events = self.events
        if not events or events[0].type != "agent_start":
            self.fail("agent_start")
        for self.index in range(1, len(events)):
            event = events[self.index]
            if event.type == "agent_end":
                self.check_agent_end(event)
                if self.index != len(events) - 1:
                    self.index += 1
                    self.fail("nothing after agent_end")
                return
            getattr(self, "on_" + event.type)(event)
        self.index = len(events)
        self.fail("agent_end")

    # --- brackets -------------------------------------------------------------------------------

    def on_agent_start(self, _event: Any) -> None:
        self.fail("one agent_start only")

    def on_turn_start(self, _event: Any) -> None:
        if self.in_turn:
            self.fail("turn_end before the next turn_start")
        self.in_turn = True
        self.turn_messages = []
        self.started_tools = {}
        self.ended_tools = set()
        self.results_seen = []

    def on_turn_end(self, event: Any) -> None:
        self.require_turn("turn_end")
        if self.open_message is not None:
            self.fail(f"message_end of the open {self.open_message.role} message")
        assistants = [m for m in self.turn_messages if isinstance(m, AssistantMessage)]
        if not assistants or event.message is not assistants[-1]:
            self.fail("turn_end carrying the turn's assistant message")
        self.check_turn_tools(event.message, event.tool_results)
        self.in_turn = False

    def check_turn_tools(self, message: AssistantMessage, tool_results: list[Any]) -> None:
        calls = [] if message.stop_reason in ("error", "aborted") else _tool_calls(message)
        ids = [call.id for call in calls]
        if set(self.started_tools) != set(ids) or self.ended_tools != set(ids):
            self.fail(f"one tool_execution_start and one tool_execution_end for each of {ids}")
        if self.results_seen != ids:
            self.fail(f"toolResult messages for {ids} in source order, saw {self.results_seen}")
        if [result.tool_call_id for result in tool_results] != ids:
            self.fail(f"turn_end.tool_results in source order {ids}")

    def on_message_start(self, event: Any) -> None:
        self.require_turn("message_start")
        if self.open_message is not None:
            self.fail(f"message_end of the open {self.open_message.role} message")
        if event.message.role == "toolResult":
            self.check_result_start(event.message)
        self.open_message = event.message

    def check_result_start(self, message: ToolResultMessage) -> None:
        call_id = message.tool_call_id
        if call_id not in self.ended_tools:
            self.fail(f"tool_execution_end({call_id!r}) before its toolResult message")
        if call_id in self.results_seen:
            self.fail(f"one toolResult message for {call_id!r}")
        self.results_seen.append(call_id)

    def on_message_update(self, event: Any) -> None:
        if self.open_message is None or self.open_message.role != "assistant":
            self.fail("message_update only inside an assistant message")
        if event.message.role != "assistant":
            self.fail("message_update of an assistant message")

    def on_message_end(self, event: Any) -> None:
        opened = self.open_message
        if opened is None:
            self.fail("message_start before message_end")
        message = event.message
        if message.role != opened.role:
            self.fail(f"message_end of the open {opened.role} message")
        if message.role != "assistant" and message is not opened:
            self.fail("message_end carrying the same object as its message_start")
        self.open_message = None
        self.turn_messages.append(message)
        self.ended_messages.append(message)

    def on_tool_execution_start(self, event: Any) -> None:
        self.require_turn("tool_execution_start")
        self.require_no_message("tool_execution_start")
        if event.tool_call_id in self.started_tools:
            self.fail(f"one tool_execution_start for {event.tool_call_id!r}")
        self.started_tools[event.tool_call_id] = event.tool_name

    def on_tool_execution_update(self, event: Any) -> None:
        self.require_running(event, "tool_execution_update")

    def on_tool_execution_end(self, event: Any) -> None:
        self.require_running(event, "tool_execution_end")
        self.ended_tools.add(event.tool_call_id)

    def require_running(self, event: Any, kind: str) -> None:
        self.require_turn(kind)
        self.require_no_message(kind)
        call_id = event.tool_call_id
        if call_id not in self.started_tools or call_id in self.ended_tools:
            self.fail(f"{kind} only between tool_execution_start and _end of {call_id!r}")

    def require_turn(self, kind: str) -> None:
        if not self.in_turn:
            self.fail(f"turn_start before {kind}")

    def require_no_message(self, kind: str) -> None:
        if self.open_message is not None:
            self.fail(f"message_end of the open {self.open_message.role} message before {kind}")

    def check_agent_end(self, event: Any) -> None:
        if self.in_turn:
            self.fail("turn_end before agent_end")
        ended = iter(self.ended_messages)
        for message in event.messages:
            if not any(message is candidate for candidate in ended):
                self.fail("agent_end.messages to be messages ended in this run, in order")
