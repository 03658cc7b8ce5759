"""Agent events read back from JSON lines, ready for :func:`pi_core.testing.check_event_grammar`.

JSON keeps values, not identity, but the grammar checker follows each message by identity (the
object of a ``message_start`` is the one of its ``message_end``, ``turn_end`` and ``agent_end``).
:func:`load_events` restores that: equal messages become one object again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from pi_core import AgentEnd, AgentEvent, MessageEnd, MessageStart, TurnEnd
from pi_core.serialization import loads


def load_events(lines: Iterable[str]) -> list[AgentEvent]:
    """Parse one JSON event per non-empty line, re-linking equal messages to one object."""
    seen: list[Any] = []

    def canonical(message: Any) -> Any:
        for known in seen:
            if known == message:
                return known
        seen.append(message)
        return message

    events: list[AgentEvent] = []
    for line in lines:
        if not line.strip():
            continue
        event = loads(line, AgentEvent)
        if isinstance(event, (MessageStart, MessageEnd)):
            event = attrs.evolve(event, message=canonical(event.message))
        elif isinstance(event, TurnEnd):
            results = [canonical(result) for result in event.tool_results]
            event = attrs.evolve(event, message=canonical(event.message), tool_results=results)
        elif isinstance(event, AgentEnd):
            event = attrs.evolve(event, messages=[canonical(m) for m in event.messages])
        events.append(event)
    return events
