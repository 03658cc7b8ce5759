"""The Agent's observable state, reduced from the events of its runs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._approvals import PendingToolCall, pending_tool_calls
from ._events import AgentEvent, TurnEnd
from ._messages import (
    AgentMessage,
    AssistantMessage,
    Model,
    SystemMessage,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
)
from ._result import RunOutcome, turn_outcome
from ._system import current_system_message, current_system_prompt, initial_system_message
from ._texts import OPERATION_ABORTED
from ._tools import AgentTool
from .nursery import AbortSignal

if TYPE_CHECKING:
    from ._compaction import Compaction

__all__ = ["READ_ONLY_PROMPT_TEXT", "AgentState"]

READ_ONLY_PROMPT_TEXT = (
    "system_prompt is read from the transcript and cannot be assigned. To change the prompt, "
    "send a SystemMessage through prompt(), steer() or follow_up(): its content adds to the "
    "prompt, and its sections replace named parts of it (None removes one)."
)


class AgentState:
    """What an Agent knows: its configuration, transcript and the state of the current run.

    ``messages`` and ``tools`` return the live lists (appending to them changes the state);
    assigning stores a copy. The transcript owns the system prompt: a given ``system_prompt``
    and ``tools`` become its leading system message unless ``messages`` starts with one, and
    ``system_prompt`` is read from it. The run fields are read-only: the Agent updates them from
    the events of its runs, before any listener sees the event.
    """

    __slots__ = (
        "_compactions",
        "_error_message",
        "_is_streaming",
        "_last_compaction",
        "_messages",
        "_outcome",
        "_pending_tool_calls",
        "_run_ended",
        "_streaming_message",
        "_tools",
        "model",
        "thinking_level",
    )

    def __init__(
        self,
        system_prompt: str,
        model: Model,
        thinking_level: ThinkingLevel,
        tools: Iterable[AgentTool],
        messages: Iterable[AgentMessage],
    ) -> None:
        self.model: Model = model
        self.thinking_level: ThinkingLevel = thinking_level
        self._tools = list(tools)
        self._messages = list(messages)
        if not self._messages or type(self._messages[0]) is not SystemMessage:
            leading = initial_system_message(system_prompt, self._tools)
            if leading is not None:
                self._messages.insert(0, leading)
        self._is_streaming = False
        self._streaming_message: AgentMessage | None = None
        self._pending_tool_calls: set[str] = set()
        """Updated in place: a reply of n calls costs n updates, not n copies of the set."""
        self._error_message: str | None = None
        self._outcome = RunOutcome.DONE
        """How the last run ended, set with ``_error_message``; what its ``RunResult`` says."""
        self._run_ended = False
        """Whether the current run's ``agent_end`` was delivered: nothing may follow it."""
        self._compactions = 0
        self._last_compaction: Compaction | None = None

    @property
    def system_prompt(self) -> str:
        """The system prompt the transcript declares at its end (read-only: send a
        :class:`SystemMessage` to change it)."""
        return current_system_prompt(self._messages)

    @system_prompt.setter
    def system_prompt(self, _value: str) -> None:
        raise AttributeError(READ_ONLY_PROMPT_TEXT)

    @property
    def tools(self) -> list[AgentTool]:
        """The agent's tools (live list); the next run declares how they differ from those the
        transcript declares."""
        return self._tools

    @tools.setter
    def tools(self, tools: Iterable[AgentTool]) -> None:
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
        """Ids of the tool calls that have started and not yet ended (a snapshot, made when
        read)."""
        return frozenset(self._pending_tool_calls)

    @property
    def pending_approvals(self) -> list[PendingToolCall]:
        """The tool calls waiting for a decision (``Agent.resolve``): those of the transcript's
        last assistant reply that have no result, read from the transcript when asked; empty
        while a run is active (its calls are still running, or about to)."""
        if self._is_streaming:
            return []
        return pending_tool_calls(self._messages, self._tools)

    @property
    def compactions(self) -> int:
        """How often the transcript was compacted (see ``Agent(compaction=...)``)."""
        return self._compactions

    @property
    def last_compaction(self) -> Compaction | None:
        """The latest compaction, if any."""
        return self._last_compaction

    def _compacted(self, messages: list[AgentMessage], compaction: Compaction) -> None:
        self._messages = messages
        self._compactions += 1
        self._last_compaction = compaction

    @property
    def error_message(self) -> str | None:
        """The error of the last failed or aborted run, cleared when a run starts."""
        return self._error_message

    def _start_run(self) -> None:
        self._run_ended = False
        self._is_streaming = True
        self._streaming_message = None
        self._error_message = None
        self._outcome = RunOutcome.DONE

    def _finish_run(self) -> None:
        self._is_streaming = False
        self._streaming_message = None
        self._pending_tool_calls = set()

    def _reset(self) -> None:
        """Forget the conversation, keeping its system baseline: one system message holding
        the prompt and tools the transcript declared."""
        baseline = current_system_message(self._messages)
        self._messages = [] if baseline is None else [baseline]
        self._is_streaming = False
        self._streaming_message = None
        self._pending_tool_calls = set()
        self._error_message = None
        self._outcome = RunOutcome.DONE

    def _reduce(self, event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_update" or event.type == "message_start":
            self._streaming_message = event.message
        elif event.type == "message_end":
            self._streaming_message = None
            self._messages.append(event.message)
        elif event.type == "tool_execution_start":
            self._pending_tool_calls.add(event.tool_call_id)
        elif event.type == "tool_execution_end":
            self._pending_tool_calls.discard(event.tool_call_id)
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
        else:
            return
        outcome = turn_outcome(event, signal.aborted)
        # An error text on a reply that neither failed nor was aborted still fails the run.
        self._outcome = RunOutcome.ERROR if outcome is RunOutcome.DONE else outcome

    def __repr__(self) -> str:
        return (
            f"<AgentState messages={len(self._messages)} streaming={self._is_streaming} "
            f"pending_tool_calls={len(self._pending_tool_calls)} error={self._error_message!r}>"
        )
