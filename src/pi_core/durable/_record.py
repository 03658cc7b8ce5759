"""What a durable run records and how: the recorded clock, the event log and the wire forms.

Engine-neutral: an engine stores what these produce (step outputs, stream entries) its own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._events import AgentEvent
from .._messages import AgentMessage, Message, now_ms
from ..serialization import from_dict, to_dict

__all__ = [
    "ENTRY_SPAN",
    "EventLog",
    "RecordedClock",
    "decode_events",
    "decode_message",
    "encode_message",
    "event_offset",
]

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
    """The lifecycle events a run has emitted and not yet written, as JSON-ready dicts."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[dict[str, Any]] = []

    def add(self, event: AgentEvent) -> None:
        self._pending.append(to_dict(event))

    def __bool__(self) -> bool:
        return bool(self._pending)

    def take(self) -> list[dict[str, Any]]:
        """Everything pending, which is then no longer pending."""
        pending, self._pending = self._pending, []
        return pending


def encode_event(event: AgentEvent) -> dict[str, Any]:
    return to_dict(event)


def decode_events(
    entry: int, values: Sequence[dict[str, Any]], after: int
) -> list[tuple[int, AgentEvent]]:
    """The events of stream entry ``entry`` whose offsets come after ``after``."""
    decoded = []
    for index, value in enumerate(values):
        offset = event_offset(entry, index)
        if offset > after:
            decoded.append((offset, from_dict(value, AgentEvent)))
    return decoded


def event_offset(entry: int, index: int) -> int:
    return entry * ENTRY_SPAN + index


def encode_message(message: AgentMessage) -> dict[str, Any]:
    return to_dict(message)


def decode_message(value: dict[str, Any]) -> AgentMessage:
    message: AgentMessage = from_dict(value, Message)
    return message
