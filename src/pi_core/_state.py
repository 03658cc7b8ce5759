"""The Agent's observable state, reduced from the events of its runs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._events import AgentEvent, TurnEnd
from ._messages import (
    AgentMessage,
    AssistantMessage,
    Model,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
)
from ._texts import OPERATION_ABORTED
from .nursery import AbortSignal

__all__ = ["AgentState"]


class AgentState:
    """What an Agent knows: its configuration, transcript and the state of the current run.

    ``messages`` and ``tools`` return the live lists (appending to them changes the state);
    assigning stores a copy. The run fields are read-only: the Agent updates them from the
    events of its runs, before any listener sees the event.
    """

    __slots__ = (
        "_error_message",
        "_is_streaming",
        "_messages",
        "_pending_tool_calls",
        "_run_ended",
        "_streaming_message",
        "_tools",
        "model",
        "system_prompt",
        "thinking_level",
    )

    def __init__(
        self,
        system_prompt: str,
        model: Model,
        thinking_level: ThinkingLevel,
        tools: Iterable[Any],
        messages: Iterable[AgentMessage],
    ) -> None:
        self.system_prompt: str = system_prompt
        self.model: Model = model
        self.thinking_level: ThinkingLevel = thinking_level
        self._tools = list(tools)
        self._messages = list(messages)
        self._is_streaming = False
        self._streaming_message: AgentMessage | None = None
        self._pending_tool_calls: frozenset[str] = frozenset()
        self._error_message: str | None = None
        self._run_ended = False
        """Whether the current run's ``agent_end`` was delivered: nothing may follow it."""

    @property
    def tools(self) -> list[Any]:
        """The agent's tools (live list)."""
        return self._tools

    @tools.setter
    def tools(self, tools: Iterable[Any]) -> None:
        self._tools = list(tools)

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript (live list)."""
        return self._messages

    @messages.setter
    def messages(self, messages: Iterable[AgentMessage]) -> None:
        self._messages = list(messages)

    @property
    def is_streaming(self) -> bool:
        """True from a run's start until it has fully settled, ``agent_end`` listeners included."""
        return self._is_streaming

    @property
    def streaming_message(self) -> AgentMessage | None:
        """The message being streamed (from ``message_start`` / ``message_update``), if any."""
        return self._streaming_message

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        """Ids of the tool calls that have started and not yet ended."""
        return self._pending_tool_calls

    @property
    def error_message(self) -> str | None:
        """The error of the last failed or aborted run, cleared when a run starts."""
        return self._error_message

    def _start_run(self) -> None:
        self._run_ended = False
        self._is_streaming = True
        self._streaming_message = None
        self._error_message = None

    def _finish_run(self) -> None:
        self._is_streaming = False
        self._streaming_message = None
        self._pending_tool_calls = frozenset()

    def _reset(self) -> None:
        self._messages = []
        self._is_streaming = False
        self._streaming_message = None
        self._pending_tool_calls = frozenset()
        self._error_message = None

    def _reduce(self, event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_update" or event.type == "message_start":
            self._streaming_message = event.message
        elif event.type == "message_end":
            self._streaming_message = None
            self._messages.append(event.message)
        elif event.type == "tool_execution_start":
            self._pending_tool_calls = self._pending_tool_calls | {event.tool_call_id}
        elif event.type == "tool_execution_end":
            self._pending_tool_calls = self._pending_tool_calls - {event.tool_call_id}
        elif event.type == "turn_end":
            self._reduce_turn_end(event, signal)
        elif event.type == "agent_end":
            self._streaming_message = None
            self._run_ended = True

    def _answer_open_calls(self, text: str) -> None:
        """Give every tool call of the last assistant message that has no result an error result.

        For a run cut short by something that is no failure of the run (``KeyboardInterrupt``,
        the host's cancellation): no events are sent for these results, but the transcript the
        Agent keeps answers every call, so ``continue_()`` can resume from it.
        """
        messages = self._messages
        answered: set[str] = set()
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if isinstance(message, ToolResultMessage):
                answered.add(message.tool_call_id)
            elif isinstance(message, AssistantMessage):
                break
        else:
            return
        if message.stop_reason in ("error", "aborted"):
            return  # providers skip such a message whole
        for block in message.content:
            if isinstance(block, ToolCall) and block.id not in answered:
                result = ToolResultMessage(block.id, block.name, [TextContent(text)], {}, True)
                messages.append(result)

    def _reduce_turn_end(self, event: TurnEnd, signal: AbortSignal) -> None:
        message = event.message
        if message.role == "assistant" and message.error_message:
            self._error_message = message.error_message
        elif event.tool_results and signal.aborted:
            # The batch was cut short: the transcript ends with its results, ready to continue.
            self._error_message = OPERATION_ABORTED

    def __repr__(self) -> str:
        return (
            f"<AgentState messages={len(self._messages)} streaming={self._is_streaming} "
            f"pending_tool_calls={len(self._pending_tool_calls)} error={self._error_message!r}>"
        )
