"""The events of a run as AG-UI events: :class:`AgUiMapper` turns each :class:`AgentEvent` into
the protocol's events (built with the ``ag-ui-protocol`` package's own types).

What AG-UI has no event of its own for is sent as a ``CUSTOM`` event whose name starts with
``pi_core.``: a tool call starting, its progress and its end (with the error flag and the
duration), each turn's usage, a limit that ended the run, and the tool calls waiting for an
approval (which also make the run finish with AG-UI's ``interrupt`` outcome).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from .. import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    PendingToolCall,
    SubagentEvent,
    TextContent,
    ToolCall,
    TurnEnd,
    Usage,
    UserMessage,
)
from ..lowlevel import add_usage, now_ms
from ._redaction import public_text

__all__ = [
    "APPROVAL_REASON",
    "LIMIT_EVENT",
    "PENDING_EVENT",
    "TOOL_END_EVENT",
    "TOOL_PROGRESS_EVENT",
    "TOOL_START_EVENT",
    "USAGE_EVENT",
    "AgUiMapper",
    "content_text",
    "usage_json",
]

TOOL_START_EVENT = "pi_core.tool_start"
TOOL_PROGRESS_EVENT = "pi_core.tool_progress"
TOOL_END_EVENT = "pi_core.tool_end"
USAGE_EVENT = "pi_core.usage"
LIMIT_EVENT = "pi_core.limit"
PENDING_EVENT = "pi_core.pending_approval"
APPROVAL_REASON = "tool_call_approval"
"""The ``reason`` of the interrupt that a tool call waiting for approval makes."""


class AgUiMapper:
    """Maps the events of one run (or of several runs of one thread) to AG-UI events.

    Keeps what the mapping needs across events: the id of the assistant message being streamed,
    the blocks open in it, when each tool call started, and the usage so far.
    """

    def __init__(self, thread_id: str, run_id: str, *, echo_prompt: bool = False) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.usage = Usage()
        self._message_id = ""
        self._open: dict[int, str] = {}  # content index -> "text" | "thinking" | "tool"
        self._tool_ids: dict[int, str] = {}  # content index -> the id of its tool call
        self._started_ms: dict[str, int] = {}
        self._children: dict[str, AgUiMapper] = {}  # the mappers of running sub-agents
        self._turn = 0
        self._at_ms: int | None = None
        self._text_index = -1  # the content index of the reply's first text block
        self._error: str | None = None
        # The client sent the prompt and shows it already; a message that enters later (steering,
        # a follow-up) it has not seen.
        self._echo_users = echo_prompt

    # --- the run's frame ------------------------------------------------------------------------

    def run_started(self) -> RunStartedEvent:
        """The first event of the stream."""
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id, timestamp=self._now())

    def run_finished(
        self,
        *,
        pending: Sequence[PendingToolCall] = (),
        limit: dict[str, Any] | None = None,
        result: Any = None,
    ) -> list[BaseEvent]:
        """The last events of a run that ended without an error: the pending approvals and the
        limit first, as custom events, then ``RUN_FINISHED`` (``interrupt`` when calls wait)."""
        events: list[BaseEvent] = []
        if limit is not None:
            events.append(self._custom(LIMIT_EVENT, limit))
        events.extend(self.pending_approvals(pending))
        outcome = None
        if pending:
            interrupts = [_interrupt(call) for call in pending]
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        events.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                result=result,
                outcome=outcome,
                usage=[_token_usage(self.usage)],
                timestamp=self._now(),
            )
        )
        return events

    def pending_approvals(self, calls: Sequence[PendingToolCall]) -> list[BaseEvent]:
        """A ``pi_core.pending_approval`` custom event for each call waiting for a decision."""
        return [self._custom(PENDING_EVENT, _pending_json(call)) for call in calls]

    def run_error(self, message: str, code: str | None = None) -> RunErrorEvent:
        """The last event of a run that failed (``code`` ``"aborted"`` for an abort)."""
        return RunErrorEvent(
            message=message, code=code, usage=[_token_usage(self.usage)], timestamp=self._now()
        )

    @property
    def error(self) -> str | None:
        """The error of the run's last reply, when it failed or was aborted (redacted)."""
        return self._error

    # --- the run's events -----------------------------------------------------------------------

    def map(self, event: AgentEvent, at_ms: int | None = None) -> list[BaseEvent]:
        """The AG-UI events of one agent event (often none, sometimes several), stamped
        ``at_ms`` (when the event happened, for events read after the fact) or now."""
        self._at_ms = at_ms
        kind = event.type
        if kind == "message_update":
            return self._update(event.assistant_message_event)  # type: ignore[union-attr]
        if kind == "message_start":
            return self._message_start(event.message)  # type: ignore[union-attr]
        if kind == "message_end":
            return self._message_end(event.message)  # type: ignore[union-attr]
        if kind == "tool_execution_start":
            return [self._tool_start(event)]
        if kind == "tool_execution_update":
            return self._tool_progress(event)
        if kind == "tool_execution_end":
            return self._tool_end(event)
        if kind == "turn_start":
            self._turn += 1
            return [StepStartedEvent(step_name=f"turn {self._turn}", timestamp=self._now())]
        if kind == "turn_end":
            return self._turn_end(event)  # type: ignore[arg-type]
        return []  # agent_start and agent_end: the stream's frame says it

    def _message_start(self, message: AgentMessage) -> list[BaseEvent]:
        if isinstance(message, AssistantMessage):
            self._echo_users = True
            self._message_id = f"msg-{uuid.uuid4().hex}"
            self._text_index = -1
            self._open.clear()
            self._tool_ids.clear()
            return []
        if isinstance(message, UserMessage) and self._echo_users:
            # A prompt or steering message: the transcript shows it where it entered.
            return self._whole_text(f"msg-{uuid.uuid4().hex}", "user", content_text(message))
        return []

    def _message_end(self, message: AgentMessage) -> list[BaseEvent]:
        if not isinstance(message, AssistantMessage):
            return []
        # A reply cut by an abort or an error leaves blocks open: close them, in order.
        events = [e for index in sorted(self._open) for e in self._close(index)]
        self._open.clear()
        if message.stop_reason in ("error", "aborted"):
            self._error = public_text(message.error_message or message.stop_reason)
        return events

    def _update(self, stream_event: Any) -> list[BaseEvent]:
        kind = stream_event.type
        index = getattr(stream_event, "content_index", -1)
        if kind == "text_delta" or kind == "thinking_delta":
            return self._delta(index, stream_event.delta)
        if kind == "toolcall_delta":
            return self._tool_args(index, stream_event)
        if kind in ("text_start", "thinking_start", "toolcall_start"):
            return self._open_block(index, stream_event.partial)
        if kind in ("text_end", "thinking_end", "toolcall_end"):
            events = self._close(index)
            self._open.pop(index, None)
            return events
        return []

    def _block_id(self, index: int) -> str:
        # The first text block has the message's id, which its tool calls name as their parent.
        if index == self._text_index:
            return self._message_id
        kind = "r" if self._open.get(index) == "thinking" else "t"
        return f"{self._message_id}-{kind}{index}"

    def _open_block(self, index: int, partial: AssistantMessage) -> list[BaseEvent]:
        block = partial.content[index] if index < len(partial.content) else None
        now = self._now()
        if isinstance(block, ToolCall):
            self._open[index] = "tool"
            self._tool_ids[index] = block.id
            return [
                ToolCallStartEvent(
                    tool_call_id=block.id,
                    tool_call_name=block.name,
                    parent_message_id=self._message_id,
                    timestamp=now,
                )
            ]
        if isinstance(block, TextContent):
            self._open[index] = "text"
            if self._text_index < 0:
                self._text_index = index
            block_id = self._block_id(index)
            return [TextMessageStartEvent(message_id=block_id, role="assistant", timestamp=now)]
        self._open[index] = "thinking"
        block_id = self._block_id(index)
        return [
            ReasoningStartEvent(message_id=block_id, timestamp=now),
            ReasoningMessageStartEvent(message_id=block_id, timestamp=now),
        ]

    def _delta(self, index: int, delta: str) -> list[BaseEvent]:
        kind = self._open.get(index)
        if not delta or kind is None:  # the protocol wants a non-empty delta
            return []
        if kind == "text":
            return [TextMessageContentEvent(message_id=self._block_id(index), delta=delta)]
        return [ReasoningMessageContentEvent(message_id=self._block_id(index), delta=delta)]

    def _tool_args(self, index: int, stream_event: Any) -> list[BaseEvent]:
        block = stream_event.partial.content[index]
        if not stream_event.delta or self._open.get(index) != "tool":
            return []
        return [ToolCallArgsEvent(tool_call_id=block.id, delta=stream_event.delta)]

    def _close(self, index: int) -> list[BaseEvent]:
        kind = self._open.get(index)
        now = self._now()
        block_id = self._block_id(index)
        if kind == "text":
            return [TextMessageEndEvent(message_id=block_id, timestamp=now)]
        if kind == "thinking":
            return [
                ReasoningMessageEndEvent(message_id=block_id, timestamp=now),
                ReasoningEndEvent(message_id=block_id, timestamp=now),
            ]
        if kind == "tool":
            return [ToolCallEndEvent(tool_call_id=self._tool_id(index), timestamp=now)]
        return []

    def _tool_id(self, index: int) -> str:
        # Set when the block opened; the id is read back from the events that carry it.
        return self._tool_ids.get(index, "")

    def _whole_text(self, message_id: str, role: Any, text: str) -> list[BaseEvent]:
        now = self._now()
        events: list[BaseEvent] = [
            TextMessageStartEvent(message_id=message_id, role=role, timestamp=now)
        ]
        if text:
            events.append(TextMessageContentEvent(message_id=message_id, delta=text))
        events.append(TextMessageEndEvent(message_id=message_id, timestamp=now))
        return events

    # --- tool calls -----------------------------------------------------------------------------

    def _tool_start(self, event: Any) -> BaseEvent:
        started = self._now()
        self._started_ms[event.tool_call_id] = started
        value = {"toolCallId": event.tool_call_id, "toolName": event.tool_name, "args": event.args}
        return self._custom(TOOL_START_EVENT, value, started)

    def _tool_progress(self, event: Any) -> list[BaseEvent]:
        partial = event.partial_result
        if type(partial.details) is SubagentEvent:
            return self._subagent(event.tool_call_id, partial.details)
        value = {
            "toolCallId": event.tool_call_id,
            "toolName": event.tool_name,
            "text": content_text(partial),
            "details": _jsonable(partial.details),
        }
        return [self._custom(TOOL_PROGRESS_EVENT, value)]

    def _subagent(self, tool_call_id: str, forwarded: SubagentEvent) -> list[BaseEvent]:
        """A sub-agent's event as AG-UI's own nesting: the child's events carry its
        ``subagentRunId`` (the parent's call id and the path of sub-agent tools), framed by
        ``SUBAGENT_STARTED`` and ``SUBAGENT_FINISHED`` / ``SUBAGENT_ERROR``."""
        run_id = _subagent_run_id(tool_call_id, forwarded.path)
        inner = forwarded.event
        events: list[BaseEvent] = []
        child = self._children.get(run_id)
        if child is None:
            child = self._children[run_id] = AgUiMapper(self.thread_id, run_id, echo_prompt=True)
            parent = (
                _subagent_run_id(tool_call_id, forwarded.path[:-1])
                if len(forwarded.path) > 1
                else None
            )
            events.append(
                SubagentStartedEvent(
                    subagent_run_id=run_id,
                    name=forwarded.path[-1],
                    parent_subagent_run_id=parent,
                    parent_tool_call_id=tool_call_id if parent is None else None,
                    timestamp=self._now(),
                )
            )
        for mapped in child.map(inner, self._at_ms):
            mapped.subagent_run_id = run_id  # type: ignore[attr-defined]
            events.append(mapped)
        if inner.type == "turn_end":  # the run's usage includes its sub-agents', at every depth
            add_usage(self.usage, inner.message.usage)
        if inner.type == "agent_end":
            del self._children[run_id]
            if child.error is not None:
                events.append(
                    SubagentErrorEvent(
                        subagent_run_id=run_id, message=child.error, timestamp=self._now()
                    )
                )
            else:
                events.append(SubagentFinishedEvent(subagent_run_id=run_id, timestamp=self._now()))
        return events

    def _tool_end(self, event: Any) -> list[BaseEvent]:
        ended = self._now()
        started = self._started_ms.pop(event.tool_call_id, ended)
        text = content_text(event.result)
        if event.is_error:
            text = public_text(text)
        value = {
            "toolCallId": event.tool_call_id,
            "toolName": event.tool_name,
            "isError": event.is_error,
            "durationMs": ended - started,
        }
        return [
            self._custom(TOOL_END_EVENT, value, ended),
            ToolCallResultEvent(
                message_id=f"{event.tool_call_id}-result",
                tool_call_id=event.tool_call_id,
                content=text,
                role="tool",
                timestamp=ended,
            ),
        ]

    def _turn_end(self, event: TurnEnd) -> list[BaseEvent]:
        message = event.message
        add_usage(self.usage, message.usage)
        value = {
            "turn": self._turn,
            "usage": usage_json(message.usage),
            "total": usage_json(self.usage),
        }
        return [
            self._custom(USAGE_EVENT, value),
            StepFinishedEvent(step_name=f"turn {self._turn}", timestamp=self._now()),
        ]

    def _now(self) -> int:
        return now_ms() if self._at_ms is None else self._at_ms

    def _custom(self, name: str, value: Any, timestamp: int | None = None) -> CustomEvent:
        return CustomEvent(name=name, value=value, timestamp=timestamp or self._now())


# --- values -------------------------------------------------------------------------------------


def content_text(message: Any) -> str:
    """The text of a message's or a tool result's content (images are left out)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


def usage_json(usage: Usage) -> dict[str, Any]:
    """A usage as the page reads it: tokens and the cost in dollars."""
    return {
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "totalTokens": usage.total_tokens,
        "cost": usage.cost.total,
    }


def _subagent_run_id(tool_call_id: str, path: Sequence[str]) -> str:
    return "/".join((tool_call_id, *path))


def _token_usage(usage: Usage) -> TokenUsage:
    return TokenUsage(
        input_tokens=usage.input + usage.cache_read + usage.cache_write,
        output_tokens=usage.output,
        total_tokens=usage.total_tokens,
        cached_input_tokens=usage.cache_read,
        cache_write_input_tokens=usage.cache_write,
    )


def _pending_json(call: PendingToolCall) -> dict[str, Any]:
    return {
        "toolCallId": call.tool_call_id,
        "toolName": call.tool_name,
        "args": _jsonable(call.args),
        "reason": call.reason,
    }


def _interrupt(call: PendingToolCall) -> Interrupt:
    message = f"{call.tool_name} waits for approval"
    if call.reason:
        message += f": {call.reason}"
    return Interrupt(
        id=call.tool_call_id,
        reason=APPROVAL_REASON,
        message=message,
        tool_call_id=call.tool_call_id,
    )


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can carry it, else its text (a tool's details can be any object)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
