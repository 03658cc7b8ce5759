"""Checks that a sequence of agent events is one well-formed run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from .. import AgentEvent, AssistantMessage, PiCoreError, ToolResultMessage
from ._transcript import tool_calls_of

__all__ = ["EventGrammarError", "check_event_grammar"]


class EventGrammarError(PiCoreError, AssertionError):
    """A sequence of agent events breaks the grammar of a run; the message says where and why."""


def check_event_grammar(events: Sequence[AgentEvent], *, allow_held: bool = False) -> None:
    """Raise :class:`EventGrammarError` unless ``events`` is one well-formed run.

    The grammar: ``agent_start``, then turns bracketed by ``turn_start`` / ``turn_end``, then
    ``agent_end`` and nothing after it. Messages are bracketed by ``message_start`` /
    ``message_end`` one at a time (the same object for both, except the assistant's streamed
    shallow copies); ``message_update`` comes only inside an assistant message. A turn has one
    assistant message, and ``turn_end`` carries it. Every tool call of that message (unless it
    stopped with ``error`` / ``aborted``) is started once after it, ended once, its updates in
    between; its toolResult message comes after its end, the results in the calls' source
    order, and ``turn_end.tool_results`` are those messages. ``agent_end.messages`` are
    messages ended during the run, in order.

    With ``allow_held``, calls may be held for approval: a held call gets no event at all, so
    a turn may leave calls that never started without results, and then ``agent_end`` follows
    it. And a run may resolve held calls: it starts with a turn that has no assistant message
    of its own, whose tool calls are calls of the reply its ``turn_end`` carries, their
    results in that reply's source order. A run that waits for the decisions itself (a
    durable run) resolves them in the turn right after the one that held them, which then
    starts every held call.

    A run of the Agent that *failed* (a hook or a listener raised) ends with the failure's own lifecycle
    (``message_start``, ``message_end``, ``turn_end``, ``agent_end`` of one synthesized error
    message) wherever the failure struck: then the events before it need only be the start of
    a well-formed run. That ``agent_end`` lists the failure last, after the run's earlier
    messages when the run ended by raising after whole turns (a typed answer's spent retries).

    "The same" message means the same object, or an equal one: events read back from JSON (say
    ``pi-core run --json`` output through :func:`pi_core.serialization.loads`) have lost their
    identity, and are checked by value.

    The error message names the index of the offending event, what was expected there and what
    was found.
    """
    if _ends_with_failure(events):
        _Grammar(events[:-4], prefix=True, allow_held=allow_held).check()
    else:
        _Grammar(events, prefix=False, allow_held=allow_held).check()


def _ends_with_failure(events: Sequence[Any]) -> bool:
    """Whether the last four events are the lifecycle of an Agent's failure message."""
    if len(events) < 5:
        return False
    start, end, turn_end, agent_end = events[-4:]
    failure = getattr(start, "message", None)
    return (
        start.type == "message_start"
        and isinstance(failure, AssistantMessage)
        and failure.stop_reason in ("error", "aborted")
        and end.type == "message_end"
        and _same(end.message, failure)
        and turn_end.type == "turn_end"
        and _same(turn_end.message, failure)
        and not turn_end.tool_results
        and agent_end.type == "agent_end"
        and len(agent_end.messages) >= 1
        and _same(agent_end.messages[-1], failure)
    )


def _same(message: Any, other: Any) -> bool:
    """The same message: the same object in a live run, an equal one in events read back from
    JSON, where identity is lost."""
    return message is other or message == other


def _describe(event: Any) -> str:
    kind = getattr(event, "type", None)
    if not isinstance(kind, str):
        return repr(event)
    if kind.startswith("tool_execution"):
        return f"{kind}({event.tool_call_id!r})"
    if kind.startswith("message"):
        message = event.message
        if isinstance(message, ToolResultMessage):
            return f"{kind}(toolResult {message.tool_call_id!r})"
        return f"{kind}({getattr(message, 'role', '?')})"
    return kind


class _Turn:
    """What has happened in the current turn."""

    __slots__ = ("assistant", "calls", "ended", "results", "resumed", "started")

    def __init__(self) -> None:
        self.assistant: AssistantMessage | None = None
        self.resumed = False
        """A turn resolving held calls: the reply comes with its ``turn_end``."""
        self.calls: list[str] = []
        """Ids of the assistant message's tool calls that must run."""
        self.started: dict[str, str] = {}
        self.ended: set[str] = set()
        self.results: list[ToolResultMessage] = []


class _Grammar:
    """A single pass over the events, keeping the open brackets."""

    def __init__(self, events: Sequence[Any], *, prefix: bool, allow_held: bool) -> None:
        self.events = events
        self.prefix = prefix
        self.allow_held = allow_held
        self.index = 0
        self.turn: _Turn | None = None
        self.open_message: Any = None
        self.ended_messages: list[Any] = []
        self.turns = 0
        self.held: list[str] = []
        """Calls the last turn left held: only ``agent_end``, or a turn resolving them, may
        follow."""
        self.resolving: list[str] = []
        """The held calls the current turn resolves (a run that waited for the decisions)."""

    def fail(self, expected: str) -> NoReturn:
        events = self.events
        found = _describe(events[self.index]) if self.index < len(events) else "the end"
        raise EventGrammarError(f"event {self.index}: expected {expected}, found {found}")

    def check(self) -> None:
        events = self.events
        if not events:
            if self.prefix:
                return
            self.fail("agent_start")
        if getattr(events[0], "type", None) != "agent_start":
            self.fail("agent_start")
        for self.index in range(1, len(events)):
            event = events[self.index]
            if getattr(event, "type", None) == "agent_end":
                self.on_agent_end(event)
                if self.index != len(events) - 1:
                    self.index += 1
                    self.fail("nothing after agent_end")
                return
            handler = getattr(self, f"on_{getattr(event, 'type', None)}", None)
            if handler is None:
                self.fail("an agent event")
            handler(event)
        if not self.prefix:
            self.index = len(events)
            self.fail("agent_end")

    # --- turns and the run ----------------------------------------------------------------------

    def on_agent_start(self, _event: Any) -> None:
        self.fail("one agent_start only")

    def on_turn_start(self, _event: Any) -> None:
        if self.turn is not None:
            self.fail("turn_end before the next turn_start")
        if self.held and not self.allow_held:
            self.fail(f"agent_end after a turn that holds calls {self.held}")
        self.resolving, self.held = self.held, []
        self.turn = _Turn()
        self.turns += 1

    def on_turn_end(self, event: Any) -> None:
        turn = self.require_turn("turn_end")
        self.require_no_message("turn_end")
        if turn.resumed:
            self.resume(turn, event.message)
        elif self.resolving:
            self.fail(f"tool_execution_start({self.resolving[0]!r}), a held call, in this turn")
        if turn.assistant is None or not _same(event.message, turn.assistant):
            self.fail("turn_end carrying the turn's assistant message")
        self.held = [call_id for call_id in turn.calls if call_id not in turn.started]
        if self.held and not self.allow_held:
            self.fail(f"tool_execution_start({self.held[0]!r}) before turn_end")
        run = [call_id for call_id in turn.calls if call_id in turn.started]
        for call_id in run:
            if call_id not in turn.ended:
                self.fail(f"tool_execution_end({call_id!r}) before turn_end")
        answered = [result.tool_call_id for result in turn.results]
        if answered != run:
            self.fail(f"toolResult messages for {run} before turn_end, saw {answered}")
        if len(event.tool_results) != len(turn.results) or any(
            not _same(given, ended)
            for given, ended in zip(event.tool_results, turn.results, strict=True)
        ):
            self.fail(f"turn_end.tool_results to be the turn's toolResult messages {answered}")
        self.turn = None

    def resume(self, turn: _Turn, message: Any) -> None:
        """Check a resolving turn's calls against the reply its ``turn_end`` carries."""
        if not isinstance(message, AssistantMessage):
            self.fail("turn_end carrying the reply whose held calls the turn resolved")
        ids = [call.id for call in tool_calls_of(message)]
        for call_id in turn.started:
            if call_id not in ids:
                self.fail(f"calls of the resolved reply {ids}, not {call_id!r}")
        unresolved = [call_id for call_id in self.resolving if call_id not in turn.started]
        if unresolved:
            self.fail(f"tool_execution_start({unresolved[0]!r}), a held call, in this turn")
        turn.assistant = message
        turn.calls = [call_id for call_id in ids if call_id in turn.started]

    def on_agent_end(self, event: Any) -> None:
        if self.turn is not None:
            self.fail("turn_end before agent_end")
        ended = iter(self.ended_messages)
        for message in event.messages:
            if not any(_same(message, candidate) for candidate in ended):
                self.fail("agent_end.messages to be messages ended in this run, in order")

    # --- messages -------------------------------------------------------------------------------

    def on_message_start(self, event: Any) -> None:
        turn = self.require_turn("message_start")
        self.require_no_message("message_start")
        message = event.message
        if isinstance(message, AssistantMessage) and (turn.assistant is not None or turn.resumed):
            self.fail("one assistant message per turn")
        if isinstance(message, ToolResultMessage):
            self.check_result_start(turn, message)
        self.open_message = message

    def check_result_start(self, turn: _Turn, message: ToolResultMessage) -> None:
        call_id = message.tool_call_id
        if turn.resumed:  # the order is checked against the reply at turn_end
            if call_id not in turn.ended:
                self.fail(f"tool_execution_end({call_id!r}) before its toolResult message")
            return
        calls = turn.calls
        if self.allow_held:  # held calls never start: the order is that of the calls that did
            calls = [call for call in calls if call in turn.started or call == call_id]
        position = len(turn.results)
        if position >= len(calls):
            self.fail(f"no more toolResult messages in this turn (calls {turn.calls})")
        if call_id != calls[position]:
            self.fail(f"the toolResult message of {calls[position]!r} (source order)")
        if call_id not in turn.ended:
            self.fail(f"tool_execution_end({call_id!r}) before its toolResult message")

    def on_message_update(self, event: Any) -> None:
        if self.open_message is None or not isinstance(self.open_message, AssistantMessage):
            self.fail("message_update only inside an assistant message")
        if not isinstance(event.message, AssistantMessage):
            self.fail("message_update of an assistant message")

    def on_message_end(self, event: Any) -> None:
        opened = self.open_message
        if opened is None:
            self.fail("message_start before message_end")
        message = event.message
        if getattr(message, "role", None) != getattr(opened, "role", None):
            self.fail(f"message_end of the open {opened.role} message")
        if not isinstance(message, AssistantMessage) and not _same(message, opened):
            self.fail("message_end carrying the same message as its message_start")
        self.open_message = None
        self.ended_messages.append(message)
        turn = self.turn
        assert turn is not None  # message_start required it
        if isinstance(message, AssistantMessage):
            turn.assistant = message
            if message.stop_reason not in ("error", "aborted"):
                turn.calls = [call.id for call in tool_calls_of(message)]
        elif isinstance(message, ToolResultMessage):
            turn.results.append(message)

    # --- tool calls -----------------------------------------------------------------------------

    def on_tool_execution_start(self, event: Any) -> None:
        turn = self.require_turn("tool_execution_start")
        self.require_no_message("tool_execution_start")
        call_id = event.tool_call_id
        if (
            self.allow_held
            and turn.assistant is None
            and self.turns == 1
            and not self.ended_messages
        ):
            turn.resumed = True  # the first turn of a run resolving held calls
        elif self.resolving and turn.assistant is None:
            turn.resumed = True  # the turn after the one that held them
        if turn.resumed:
            if call_id in turn.started:
                self.fail(f"one tool_execution_start for {call_id!r}")
            turn.started[call_id] = event.tool_name
            return
        if turn.assistant is None:
            self.fail("the turn's assistant message before tool_execution_start")
        if call_id not in turn.calls:
            self.fail(f"tool_execution_start of one of the calls {turn.calls}")
        if call_id in turn.started:
            self.fail(f"one tool_execution_start for {call_id!r}")
        turn.started[call_id] = event.tool_name

    def on_tool_execution_update(self, event: Any) -> None:
        self.require_running(event, "tool_execution_update")

    def on_tool_execution_end(self, event: Any) -> None:
        turn = self.require_running(event, "tool_execution_end")
        turn.ended.add(event.tool_call_id)

    def require_running(self, event: Any, kind: str) -> _Turn:
        turn = self.require_turn(kind)
        self.require_no_message(kind)
        call_id = event.tool_call_id
        if call_id not in turn.started or call_id in turn.ended:
            self.fail(f"{kind} only between tool_execution_start and _end of {call_id!r}")
        if event.tool_name != turn.started[call_id]:
            self.fail(f"{kind} naming the tool {turn.started[call_id]!r} of its start")
        return turn

    def require_turn(self, kind: str) -> _Turn:
        if self.turn is None:
            self.fail(f"turn_start before {kind}")
        return self.turn

    def require_no_message(self, kind: str) -> None:
        if self.open_message is not None:
            self.fail(f"message_end of the open {self.open_message.role} message before {kind}")
