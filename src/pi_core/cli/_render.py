"""Rendering agent events: live, human-readable text, or one JSON event per line.

Both renderers are agent listeners (``renderer(event, signal)``) and keep a :class:`RunStats` of
the current run, from which the command derives its exit code.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import attrs

if TYPE_CHECKING:
    from ..proxy._wire import WireEncoder

from .. import (
    AgentEvent,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    RunOutcome,
    SubagentEvent,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    UserMessage,
)
from ..lowlevel import OPERATION_ABORTED, clip, turn_outcome
from ..nursery import AbortSignal

__all__ = ["JsonRenderer", "LiveRenderer", "RunStats", "Style", "use_color"]

Path = tuple[str, ...]
"""The sub-agent tools an event comes from, outermost first; empty for the run's own."""

_ARGS_LIMIT = 80
_RESULT_LIMIT = 100


def use_color(stream: TextIO) -> bool:
    """ANSI styling only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class Style:
    """ANSI styles, or plain text when disabled."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


@attrs.define
class RunStats:
    """What one run did, gathered from its events."""

    turns: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    outcome: RunOutcome = RunOutcome.DONE
    error_message: str | None = None
    clock: Callable[[], float] = time.perf_counter
    """Seconds, from any origin: what ``elapsed`` is measured with."""
    started: float = attrs.Factory(lambda self: self.clock(), takes_self=True)
    elapsed: float = 0.0

    def observe(self, event: AgentEvent, signal: AbortSignal) -> None:
        """Update the counters for ``event``."""
        if isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
            self.tokens += event.message.usage.total_tokens
            self.cost += event.message.usage.cost.total
        elif isinstance(event, ToolExecutionEnd):
            self.tool_calls += 1
        elif isinstance(event, TurnEnd):
            self._observe_turn_end(event, signal)
        elif event.type == "agent_end":
            self.elapsed = self.clock() - self.started

    def _observe_turn_end(self, event: TurnEnd, signal: AbortSignal) -> None:
        # The Agent's own rule, so that the summary line shows what the run's result will say.
        self.turns += 1
        outcome = turn_outcome(event, signal.aborted)
        if outcome is RunOutcome.ABORTED:
            self.outcome = outcome
            self.error_message = event.message.error_message or OPERATION_ABORTED
        elif outcome is RunOutcome.ERROR:
            self.outcome = outcome
            self.error_message = event.message.error_message


class JsonRenderer:
    """Writes each event as one line of JSON (:func:`pi_core.serialization.dumps`).

    ``compact`` writes each ``message_update`` as ``{"type": "message_update",
    "assistantMessageEvent": ...}`` with the stream event in the proxy's wire form (no
    ``partial``), instead of the whole message twice: the message is in ``message_start`` and
    ``message_end``.
    """

    def __init__(self, out: TextIO, notes: TextIO | None = None, *, compact: bool = False) -> None:
        self.out = out
        self.notes = notes if notes is not None else sys.stderr
        self.stats = RunStats()
        self.compact = compact
        self._wire: WireEncoder | None = None

    def __call__(self, event: AgentEvent, signal: AbortSignal) -> None:
        from ..serialization import dumps  # imported on use: cattrs hooks are built lazily

        if event.type == "agent_start":
            self.stats = RunStats()
        self.stats.observe(event, signal)
        if self.compact and event.type == "message_start":
            from ..proxy._wire import WireEncoder

            self._wire = WireEncoder()  # one per message: it tracks the streamed tool calls
        if self.compact and event.type == "message_update" and self._wire is not None:
            for payload in self._wire.payloads(event.assistant_message_event):
                line = {"type": "message_update", "assistantMessageEvent": payload}
                self.out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        else:
            self.out.write(dumps(event) + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        """A remark for the user; on stderr, so that stdout stays pure JSON lines."""
        self.notes.write(text + "\n")
        self.notes.flush()


class LiveRenderer:
    """Shows a run as it happens: text, thinking, tool calls with progress, a closing summary.

    Args:
        out: where to write (flushed after each event, so pipes see output at once).
        style: colors, or none.
        echo_prompt: show the prompt of a run (off in an interactive chat, where it was typed).
        summary_at_agent_end: write the closing summary on ``agent_end``; off when the owner
            calls :meth:`summary` itself once it is ready for more input (the chat).
        clock: seconds, from any origin, for the durations shown; by default the time events
            arrive, which is what they took when the run is shown as it happens.
    """

    def __init__(
        self,
        out: TextIO,
        style: Style,
        *,
        echo_prompt: bool = True,
        summary_at_agent_end: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.out = out
        self.style = style
        self.echo_prompt = echo_prompt
        self.summary_at_agent_end = summary_at_agent_end
        self.clock = clock
        self.stats = RunStats(clock=clock)
        self.turn_number = 0
        """Turns shown so far: numbering goes on across the runs of a chat."""
        self._at_line_start = True
        self._seen_assistant = False
        self._tool_started: dict[tuple[Path, str], float] = {}
        """When each call started, by the sub-agent path it runs in and its id."""
        self._call_count = 0
        self._call_labels: dict[str, str] = {}
        """``"research #2"``: how the lines of a call's sub-agent are labelled, by call id."""
        self._in_thinking = False

    def __call__(self, event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "agent_start":
            self.stats = RunStats(clock=self.clock)
        self.stats.observe(event, signal)
        self._render(event)
        self.out.flush()

    def note(self, text: str) -> None:
        """A dim remark on a line of its own (e.g. from the chat, in the middle of a reply)."""
        self._line(self.style.dim(text))
        if self._in_thinking:  # the thinking goes on after the note: label it again
            self._write(self._thinking_label())
        self.out.flush()

    def header(self, text: str) -> None:
        """A bold line, e.g. which model and tools a command uses."""
        self._line(self.style.bold(text))
        self.out.flush()

    def prompt(self, text: str) -> None:
        """An input prompt, left open: the user's Enter ends the line."""
        self._line_break()
        self.out.write(self.style.bold(text))
        self.out.flush()

    # --- dispatch -------------------------------------------------------------------------------

    def _render(self, event: AgentEvent) -> None:
        if event.type == "agent_start":
            self._seen_assistant = False
        elif event.type == "turn_start":
            self.turn_number += 1
            self._line(self.style.dim(f"── turn {self.turn_number}"))
        elif isinstance(event, MessageStart):
            self._message_start(event)
        elif isinstance(event, MessageUpdate):
            self._stream(event.assistant_message_event)
        elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
            self._assistant_end(event.message)
        elif isinstance(event, ToolExecutionStart):
            self._tool_start(event)
        elif isinstance(event, ToolExecutionUpdate):
            self._tool_update(event)
        elif isinstance(event, ToolExecutionEnd):
            self._tool_end(event)
        elif event.type == "agent_end" and self.summary_at_agent_end:
            self._summary()

    def _message_start(self, event: MessageStart) -> None:
        message = event.message
        if isinstance(message, AssistantMessage):
            self._seen_assistant = True
        elif isinstance(message, UserMessage):
            if self._seen_assistant:  # injected mid-run: steering or a follow-up
                self._line(self.style.cyan("» queued message: ") + _user_text(message))
            elif self.echo_prompt:
                self._line(self.style.bold("you: ") + _user_text(message))

    def _stream(self, event: AssistantMessageEvent) -> None:
        if isinstance(event, ThinkingStart):
            self._line_break()
            self._write(self._thinking_label())
            self._in_thinking = True
        elif isinstance(event, ThinkingDelta):
            self._write(event.delta, self.style.dim)
        elif isinstance(event, TextDelta):
            self._write(event.delta)
        elif isinstance(event, (ThinkingEnd, TextStart, TextEnd)):
            self._line_break()
            self._in_thinking = False

    def _thinking_label(self) -> str:
        return self.style.dim("thinking: ") if self.style.enabled else "[thinking] "

    def _assistant_end(self, message: AssistantMessage) -> None:
        self._line_break()
        self._in_thinking = False
        if message.stop_reason == "error":
            self._line(self.style.red(f"error: {message.error_message}"))
        elif message.stop_reason == "aborted":
            self._line(self.style.yellow(f"aborted: {message.error_message}"))

    # --- tools ----------------------------------------------------------------------------------

    def _tool_start(self, event: ToolExecutionStart, who: str = "", path: Path = ()) -> None:
        self._tool_started[(path, event.tool_call_id)] = self.clock()
        if not path:  # a call of the run itself: its sub-agent's lines are labelled after it
            self._call_count += 1
            self._call_labels[event.tool_call_id] = f"{event.tool_name} #{self._call_count}"
        args = clip(json.dumps(event.args, ensure_ascii=False), _ARGS_LIMIT)
        name = self.style.cyan(event.tool_name)
        self._line(f"{_indent(path)}{who}→ {name} {self.style.dim(args)}")

    def _tool_update(self, event: ToolExecutionUpdate, who: str = "", path: Path = ()) -> None:
        details = event.partial_result.details
        if isinstance(details, SubagentEvent):
            self._subagent_event(details, self._call_labels.get(event.tool_call_id, ""))
            return
        progress = clip(_result_text(event.partial_result), _RESULT_LIMIT)
        self._line(f"{_indent(path)}{who}" + self.style.dim(f"⋯ {event.tool_name}: {progress}"))

    def _tool_end(self, event: ToolExecutionEnd, who: str = "", path: Path = ()) -> None:
        started = self._tool_started.pop((path, event.tool_call_id), None)
        took = _duration(self.clock() - started) if started is not None else "?"
        preview = clip(_result_text(event.result), _RESULT_LIMIT)
        mark = self.style.red("✗") if event.is_error else self.style.green("✓")
        took = self.style.dim(f"({took})")
        name = self.style.cyan(event.tool_name)
        self._line(f"{_indent(path)}{who}{mark} {name}: {preview} {took}")

    def _subagent_event(self, forwarded: SubagentEvent, call_label: str) -> None:
        """A sub-agent's step, indented under the call that runs it and labelled with that call
        (children run side by side): its tool calls and its replies, one line each, since a
        child's streaming text would interleave with its siblings'."""
        event, path = forwarded.event, forwarded.path
        who = self.style.dim(" > ".join([call_label or path[0], *path[1:]]) + " ")
        if isinstance(event, ToolExecutionStart):
            self._tool_start(event, who, path)
        elif isinstance(event, ToolExecutionUpdate):
            self._tool_update(event, who, path)
        elif isinstance(event, ToolExecutionEnd):
            self._tool_end(event, who, path)
        elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
            text = " ".join(_assistant_text(event.message).split())
            if text:
                self._line(f"{_indent(path)}{who}{clip(text, _RESULT_LIMIT)}")

    # --- the summary ----------------------------------------------------------------------------

    def summary(self) -> None:
        """Write the last run's closing line: outcome, turns, tool calls, tokens, cost, time."""
        self._summary()
        self.out.flush()

    def _summary(self) -> None:
        stats = self.stats
        color = {RunOutcome.DONE: self.style.green, RunOutcome.ERROR: self.style.red}
        word = color.get(stats.outcome, self.style.yellow)(stats.outcome.value)
        parts = [
            word,
            _plural(stats.turns, "turn"),
            _plural(stats.tool_calls, "tool call"),
            f"{stats.tokens:,} tokens",
            f"${stats.cost:.4f}",
            _duration(stats.elapsed),
        ]
        self._line(" · ".join(parts))

    # --- output ---------------------------------------------------------------------------------

    def _write(self, text: str, style: Callable[[str], str] | None = None) -> None:
        """Write ``text`` (styled), remembering whether the cursor is now at a line start."""
        if text:
            self.out.write(style(text) if style is not None else text)
            self._at_line_start = text.endswith("\n")

    def _line_break(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _line(self, text: str) -> None:
        self._line_break()
        self._write(text + "\n")


def _indent(path: Path) -> str:
    """The indent of a tool line: two spaces, and two more per sub-agent level."""
    return "  " * (len(path) + 1)


def _assistant_text(message: AssistantMessage) -> str:
    return " ".join(block.text for block in message.content if isinstance(block, TextContent))


def _result_text(result: AgentToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    return " ".join(" ".join(texts).split())


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(block.text for block in message.content if isinstance(block, TextContent))


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
