"""What :meth:`Agent.prompt` and :meth:`Agent.continue_` return: the outcome of one run."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ._exceptions import RunError
from ._messages import AgentMessage, AssistantMessage, TextContent

__all__ = ["RunResult"]


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

    @property
    def ok(self) -> bool:
        """True when the run neither failed nor was aborted."""
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
        """
        if self.error_message is not None:
            raise RunError(self.error_message, self)
        return self
