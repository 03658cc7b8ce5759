"""The Agent's pending-message queues (steering and follow-up)."""

from __future__ import annotations

from collections import deque
from typing import Literal

from ._messages import AgentMessage

__all__ = ["MessageQueue", "QueueMode"]

QueueMode = Literal["all", "one-at-a-time"]


def check_queue_mode(mode: str) -> QueueMode:
    """Return ``mode`` if it names a queue mode, else raise ``ValueError``."""
    if mode not in ("all", "one-at-a-time"):
        raise ValueError(f"queue mode must be 'all' or 'one-at-a-time', not {mode!r}")
    return mode  # type: ignore[return-value]


class MessageQueue:
    """A FIFO of messages waiting to be injected into a run; the mode is read at drain time."""

    __slots__ = ("_messages", "mode")

    def __init__(self, mode: QueueMode) -> None:
        self.mode: QueueMode = check_queue_mode(mode)
        self._messages: deque[AgentMessage] = deque()

    def enqueue(self, message: AgentMessage) -> None:
        self._messages.append(message)

    def drain(self) -> list[AgentMessage]:
        """Everything queued (mode ``"all"``) or the oldest message (``"one-at-a-time"``)."""
        if not self._messages:
            return []
        if self.mode == "all":
            drained = list(self._messages)
            self._messages.clear()
            return drained
        return [self._messages.popleft()]

    def peek(self) -> list[AgentMessage]:
        """What :meth:`drain` would return now, left in the queue."""
        if not self._messages or self.mode == "all":
            return list(self._messages)
        return [self._messages[0]]

    def clear(self) -> None:
        self._messages.clear()

    def __len__(self) -> int:
        return len(self._messages)
