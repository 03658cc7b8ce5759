"""What a durable run records and how: the recorded clock, the event log and the wire forms.

Engine-neutral: an engine stores what these produce (step outputs, stream entries) its own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import AgentEnd, AgentEvent, AgentMessage, Message, MessageEnd
from ..lowlevel import now_ms
from ..serialization import dumps, from_dict, to_dict

__all__ = [
    "ENTRY_SPAN",
    "MAX_RESULT_BYTES",
    "EventLog",
    "RecordedClock",
    "Transcript",
    "decode_events",
    "decode_message",
    "encode_message",
    "event_offset",
    "unrecordable",
]

MAX_RESULT_BYTES = 2 * 1024 * 1024
"""The default cap of a tool result a durable run records, in bytes of its JSON text."""

ENTRY_SPAN = 1_000_000
"""Offsets of events: ``entry * ENTRY_SPAN + index`` for the index-th event of a stream entry."""


class RecordedClock:
    """A clock that reads only what was recorded: the start time, then the end of each step.

    Its readings are a function of recorded values alone, so a replayed run stamps its messages
    exactly as the first run did. Parallel steps may end in any order on replay; the clock keeps
    the latest end, which does not depend on that order.
    """

    __slots__ = ("now",)

    def __init__(self, start_ms: int) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ended_ms: int) -> None:
        """Take a recorded end time into account."""
        if ended_ms > self.now:
            self.now = ended_ms


def step_end() -> int:
    """The end time a step records with its output (the wall clock, read inside the step)."""
    return now_ms()


class EventLog:
    """The lifecycle events a run has emitted and not yet written, in their written form."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[list[Any]] = []

    def add(self, event: AgentEvent, at_ms: int) -> None:
        self._pending.append(encode_event(event, at_ms))

    def __bool__(self) -> bool:
        return bool(self._pending)

    def take(self) -> list[list[Any]]:
        """Everything pending, which is then no longer pending."""
        pending, self._pending = self._pending, []
        return pending


_FROM_MESSAGE_ENDS = "messagesAreTheMessageEnds"
"""The key that stands for ``agent_end``'s messages in a stream entry: they are written once, as
the stream's ``message_end`` events, which are the run's new messages in order."""


def encode_event(event: AgentEvent, at_ms: int) -> list[Any]:
    """An event as a stream entry holds it: ``[at_ms, event as a JSON-ready dict]``.

    ``at_ms`` is the run's clock when the event was emitted: for lifecycle events a recorded
    reading, so a reader shows the durations the run had, not when it happened to read them.
    ``agent_end`` goes without its messages, which the stream holds already.
    """
    data = to_dict(event)
    if event.type == "agent_end":
        del data["messages"]
        data[_FROM_MESSAGE_ENDS] = True
    return [at_ms, data]


class Transcript:
    """The messages of the ``message_end`` events a reader has decoded, from the first entry on:
    what a stream's ``agent_end`` carries."""

    __slots__ = ("messages",)

    def __init__(self) -> None:
        self.messages: list[AgentMessage] = []


def decode_events(
    entry: int, values: Sequence[Any], after: int, transcript: Transcript
) -> list[tuple[int, int | None, AgentEvent]]:
    """``(offset, at_ms, event)`` of stream entry ``entry``, for offsets after ``after``.

    Every event of the entry is decoded, in order, to keep ``transcript`` (which must hold the
    earlier entries' ``message_end`` messages) complete. ``at_ms`` is ``None`` for an event
    written as a bare dict, with no time (older runs).
    """
    decoded = []
    for index, value in enumerate(values):
        at_ms, data = (None, value) if isinstance(value, dict) else value
        if data.get(_FROM_MESSAGE_ENDS):
            event: AgentEvent = AgentEnd(list(transcript.messages))
        else:
            event = from_dict(data, AgentEvent)
            if isinstance(event, MessageEnd):
                transcript.messages.append(event.message)
        offset = event_offset(entry, index)
        if offset > after:
            decoded.append((offset, at_ms, event))
    return decoded


def event_offset(entry: int, index: int) -> int:
    return entry * ENTRY_SPAN + index


def unrecordable(tool_name: str, returned: object, max_bytes: int) -> str | None:
    """Why a tool's ``returned`` value cannot be recorded, as the error text the model gets; or
    ``None`` when it can.

    A durable run records a result as JSON data: what pi_core.serialization cannot write as JSON
    (a lock, an open file) is refused here, before the engine would fail to store it, and so is a
    result of more than ``max_bytes`` bytes of JSON.
    """
    try:
        size = len(dumps(returned).encode())
    except (TypeError, ValueError) as exc:
        return f"Tool {tool_name} returned a result that cannot be recorded (not JSON data: {exc})"
    if size > max_bytes:
        return (
            f"Tool {tool_name} returned {size} bytes of result, more than the {max_bytes} a "
            "durable run records (open_worker's max_result_bytes)"
        )
    return None


def encode_message(message: AgentMessage) -> dict[str, Any]:
    return to_dict(message)


def decode_message(value: dict[str, Any]) -> AgentMessage:
    message: AgentMessage = from_dict(value, Message)
    return message
