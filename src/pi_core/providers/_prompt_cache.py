"""The faux provider's simulated prompt cache: the last prompt of each session, within bounds.

A provider's cache is bounded, and so is this one: a server (the CLI's proxy serves the demo
model) sees session ids chosen by its clients, and a cache of every session's prompt would keep
whatever they sent for ever. The least recently used sessions go first.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["MAX_CACHED_CHARS", "MAX_CACHED_SESSIONS", "PromptCache"]

MAX_CACHED_SESSIONS = 256
"""Sessions whose last prompt is kept."""

MAX_CACHED_CHARS = 8_000_000
"""Characters kept over all sessions; a longer prompt is not kept at all."""


class PromptCache:
    """The last prompt of at most ``max_sessions`` sessions, ``max_chars`` characters in all."""

    __slots__ = ("_chars", "_max_chars", "_max_sessions", "_prompts")

    def __init__(
        self, max_sessions: int = MAX_CACHED_SESSIONS, max_chars: int = MAX_CACHED_CHARS
    ) -> None:
        self._prompts: OrderedDict[str, str] = OrderedDict()
        self._chars = 0
        self._max_sessions = max_sessions
        self._max_chars = max_chars

    def __len__(self) -> int:
        return len(self._prompts)

    @property
    def chars(self) -> int:
        """Characters kept now."""
        return self._chars

    def swap(self, session_id: str, prompt: str) -> str | None:
        """Keep ``prompt`` as the session's last one; return the one it replaces, if kept."""
        previous = self._prompts.pop(session_id, None)
        if previous is not None:
            self._chars -= len(previous)
        if len(prompt) <= self._max_chars:
            self._prompts[session_id] = prompt
            self._chars += len(prompt)
            self._evict()
        return previous

    def _evict(self) -> None:
        while len(self._prompts) > self._max_sessions or self._chars > self._max_chars:
            _, dropped = self._prompts.popitem(last=False)
            self._chars -= len(dropped)
