"""The script every peer follows, and the tally that proves a run followed it.

Each model reply streams the text ``TEXT`` as three pieces, then calls ``TOOL`` with no
arguments; the last reply is the text alone. The tool returns ``RESULT``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["PIECES", "RESULT", "TEXT", "TOOL", "PeerRun", "Tally", "call_id"]

PIECES = ("a", "b", "c")
TEXT = "".join(PIECES)
TOOL = "noop"
RESULT = "ok"

PeerRun = Callable[[], Awaitable[int]]
"""One timed run of a peer; returns the number of tool calls it executed (T - 1)."""


def call_id(turn: int) -> str:
    """A tool-call id unique within the run, as a real model's are (frameworks may key on it)."""
    return f"call_{turn}"


@dataclass
class Tally:
    """What one run did, counted by the scripted model, the tool and the event consumer."""

    model_calls: int = 0
    tool_calls: int = 0
    text_pieces: int = 0
    """Streamed text pieces the event consumer saw; stays 0 when the run does not stream."""

    def verify(self, turns: int, output: object, *, streamed: bool) -> int:
        """Raise unless the run followed the script; return the tool calls it executed.

        A framework that skipped a tool call, stopped early or did not stream would otherwise
        look fast, so every timed run is checked, not just the first.
        """
        got = {
            "model calls": self.model_calls,
            "tool calls": self.tool_calls,
            "streamed text pieces": self.text_pieces,
            "final output": output,
        }
        want = {
            "model calls": turns,
            "tool calls": turns - 1,
            "streamed text pieces": len(PIECES) * turns if streamed else 0,
            "final output": TEXT,
        }
        if got != want:
            raise RuntimeError(f"the run did not follow the script: got {got}, want {want}")
        return self.tool_calls
