"""What :meth:`Agent.prompt` and :meth:`Agent.continue_` return: the outcome of one run."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

import attrs

from ._approvals import PendingToolCall
from ._events import TurnEnd
from ._exceptions import OutputError, RunError
from ._limits import LimitReached
from ._messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    Usage,
    UsageCost,
)

__all__ = ["RunOutcome", "RunResult", "add_usage", "total_usage", "turn_outcome"]


class RunOutcome(str, Enum):
    """How a run ended. A ``str``: ``result.outcome == "done"`` holds, and ``str()`` is the value,
    as with :class:`enum.StrEnum`."""

    DONE = "done"
    """The model stopped asking for tools (or a hook ended the run)."""
    ERROR = "error"
    """A reply failed, or a hook or listener raised."""
    ABORTED = "aborted"
    """The run was aborted before its last reply was complete, or during a tool batch."""
    LIMIT = "limit"
    """A limit of :class:`~pi_core.RunLimits` ended the run (``stopped_by`` says which)."""
    PENDING = "pending"
    """The run holds tool calls that wait for a decision (``pending`` lists them)."""

    def __str__(self) -> str:
        return self.value


def turn_outcome(event: TurnEnd, aborted: bool) -> RunOutcome:
    """The outcome a run has after ``event``, its signal reading ``aborted``: the rule the
    Agent's state and every other reader of a run's events share.

    An aborted reply, or a batch cut short by an abort, is ``ABORTED``; a failed reply
    ``ERROR``; anything else ``DONE`` (the run goes on, or ends well).
    """
    message = event.message
    if message.stop_reason == "aborted" or (event.tool_results and aborted):
        return RunOutcome.ABORTED
    if message.stop_reason == "error":
        return RunOutcome.ERROR
    return RunOutcome.DONE


@attrs.frozen
class RunResult:
    """The outcome of one Agent run, so that no caller has to read the state for it.

    ``print((await agent.prompt("Hi")).text)`` prints the answer;
    ``(await agent.prompt("Hi")).raise_for_error()`` turns a failed or aborted run into an
    exception.
    """

    messages: Sequence[AgentMessage]
    """The messages the run added to the transcript (those of its ``agent_end`` event)."""
    error_message: str | None
    """Why the run failed or was aborted (as ``agent.state.error_message``); ``None`` if it did
    not."""
    outcome: RunOutcome = attrs.field()
    """How the run ended: ``DONE``, ``ERROR``, ``ABORTED``, ``LIMIT`` or ``PENDING``."""
    stopped_by: LimitReached | None = None
    """The limit that ended the run, with what the run had counted; ``None`` if none did."""
    usage: Usage = attrs.field()
    """What the run's replies used, added up (tokens and dollars)."""
    pending: Sequence[PendingToolCall] = ()
    """The tool calls the run holds for a decision (``Agent.resolve``); empty if none."""
    output: Any = attrs.field(default=None, kw_only=True)
    """The run's typed answer, an instance of its ``output_type``; ``None`` without one, or
    when the run ended before the model gave it."""
    output_failed: bool = attrs.field(default=False, kw_only=True)
    """The run failed because its retries at a typed answer were spent (``raise_for_error``
    raises :class:`OutputError`)."""

    @outcome.default
    def _outcome_from_error(self) -> RunOutcome:
        return RunOutcome.DONE if self.error_message is None else RunOutcome.ERROR

    @usage.default
    def _usage_of_messages(self) -> Usage:
        return total_usage(self.messages)

    @property
    def ok(self) -> bool:
        """True when the run neither failed nor was aborted (a run that a turn, token or cost
        limit ended, or that holds calls for approval, is ok)."""
        return self.error_message is None

    @property
    def reply(self) -> AssistantMessage | None:
        """The run's last assistant message (``None`` if the model was never called)."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    @property
    def text(self) -> str:
        """The text of :attr:`reply` (its text blocks joined), or ``""``."""
        reply = self.reply
        if reply is None:
            return ""
        return "".join(block.text for block in reply.content if isinstance(block, TextContent))

    def raise_for_error(self) -> RunResult:
        """Return this result if the run succeeded.

        Raises:
            RunError: the run failed or was aborted; its ``result`` is this result.
            OutputError: the run's retries at its typed answer were spent.
        """
        if self.error_message is not None:
            error = OutputError if self.output_failed else RunError
            raise error(self.error_message, self)
        return self


def total_usage(messages: Sequence[AgentMessage]) -> Usage:
    """The usage of the assistant replies among ``messages``, and what their tools spent
    themselves (a sub-agent's run), added up."""
    total = Usage()
    for message in messages:
        spent = (
            message.usage if isinstance(message, (AssistantMessage, ToolResultMessage)) else None
        )
        if spent is not None:
            add_usage(total, spent)
    return total


def add_usage(total: Usage, usage: Usage) -> None:
    """Add ``usage`` to ``total`` in place (the total cost included)."""
    total.input += usage.input
    total.output += usage.output
    total.cache_read += usage.cache_read
    total.cache_write += usage.cache_write
    total.total_tokens += usage.total_tokens
    cost: UsageCost = total.cost
    cost.input += usage.cost.input
    cost.output += usage.cost.output
    cost.cache_read += usage.cost.cache_read
    cost.cache_write += usage.cost.cache_write
    cost.total += usage.cost.total
