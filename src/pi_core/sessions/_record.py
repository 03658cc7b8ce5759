"""Recording an Agent's runs into a session file, as they happen."""

from __future__ import annotations

from collections.abc import Callable

from .. import Agent, AgentEvent, Compaction
from ._file import SessionFile

__all__ = ["record"]


def record(agent: Agent, session: SessionFile) -> Callable[[], bool]:
    """Append every message ``agent``'s runs add to ``session``, each as its ``message_end``
    arrives, and a compaction entry for each compaction the agent makes.

    It restores nothing itself: give the agent ``session.messages()`` to continue a session.
    When the session has no messages yet, the agent's transcript so far is appended first.

    Returns:
        The unsubscribe function (it returns whether the recorder was still subscribed).
    """
    if not session.messages():
        for message in agent.state.messages:
            session.append(message)
    recorder = _Recorder(agent, session)
    unsubscribe = agent.subscribe(recorder.on_event)
    stop_compactions = agent.on_compaction(recorder.on_compaction)

    def stop() -> bool:
        stop_compactions()
        return unsubscribe()

    return stop


class _Recorder:
    __slots__ = ("agent", "session")

    def __init__(self, agent: Agent, session: SessionFile) -> None:
        self.agent = agent
        self.session = session

    def on_event(self, event: AgentEvent) -> None:
        if event.type == "message_end":
            self.session.append(event.message)

    def on_compaction(self, compaction: Compaction) -> None:
        """Append the compaction from the point the agent's transcript had reached: a message
        the agent let go of since (the reply that overflowed the context) stays behind on a
        branch of its own."""
        state = self.agent.state
        session = self.session
        messages = session.messages()
        kept = {id(message) for message in state.messages}
        last = next((i for i in range(len(messages) - 1, -1, -1) if id(messages[i]) in kept), None)
        # No message shared: the agent's transcript did not come from this session, so there is
        # nothing to tell about where it stands in it.
        if last is not None and last < len(messages) - 1:
            entry_id = session.message_entry_id(last)
            if entry_id is not None:
                session.branch(entry_id)
        session.append_compaction(compaction)
