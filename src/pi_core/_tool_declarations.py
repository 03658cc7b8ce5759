"""Declaring a run's tools to the model: the system messages that say how they changed.

A run can execute the tools of its context; the model may call those its transcript declares.
Before the prompts of a run and before the injected messages of every later turn, the loop
compares the two and, where they differ, inserts a :class:`SystemMessage` with ``tools_added``
and ``tools_removed``, so that replaying the transcript always gives the run's tools.

A run makes many turns with the same tools, so :class:`ToolDeclarations` keeps what the
transcript declares as the run goes (replaying only the messages added since it last looked),
and compares the tools themselves only when they, or the declarations, changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ._messages import AgentContext, AgentMessage, SystemMessage, Tool
from ._system import apply_tool_changes, tool_changes

__all__ = ["ToolDeclarations"]


class ToolDeclarations:
    """What one run's transcript declares about its tools, kept up to date turn by turn.

    It follows one transcript list: when the run's context is replaced (``prepare_next_turn``)
    or its transcript shrinks, it replays the new one from the start.
    """

    __slots__ = ("_declared", "_has_system", "_messages", "_seen", "_stale", "_tools")

    def __init__(self) -> None:
        self._declared: dict[str, Tool] = {}
        """The declarations replayed from the transcript, by name, in declared order."""
        self._has_system = False
        """Whether the transcript holds a system message at all."""
        self._messages: list[AgentMessage] | None = None
        self._seen = 0
        """How many messages of ``_messages`` were replayed."""
        self._stale = True
        """Whether the declarations changed since the tools were last compared with them."""
        self._tools: tuple[Any, ...] | None = None
        """The tools as they were last compared (the same objects mean the same declarations)."""

    def declare(
        self,
        context: AgentContext,
        pending: Sequence[AgentMessage],
        clock: Callable[[], int],
    ) -> Sequence[AgentMessage]:
        """``pending`` (the messages about to join ``context``'s transcript) with the tool
        changes they need declared.

        When the run's tools match what the transcript and ``pending`` declare, ``pending`` is
        returned as it is. Otherwise the last system message of ``pending`` carries the changes
        (a copy, its own tool fields replaced: the run's tools are what the model gets), or a new
        one, stamped by ``clock``, goes before the first message of ``pending`` that is not a
        system message. A transcript that declares nothing yet gets ``context.system_prompt``
        as that message's content.
        """
        self._catch_up(context.messages)
        has_system = (
            any(type(message) is SystemMessage for message in pending) if pending else False
        )
        tools = context.tools
        if (
            not has_system
            and not self._stale
            and (self._has_system or not context.system_prompt)
            and self._tools is not None
            and tuple(tools) == self._tools
        ):
            return pending
        self._tools = tuple(tools)
        self._stale = False
        return self._declared_pending(context, pending, clock)

    def _catch_up(self, messages: list[AgentMessage]) -> None:
        """Replay what ``messages`` gained since the last look (all of it, if it is another
        list or shorter than before)."""
        if messages is not self._messages or len(messages) < self._seen:
            self._messages = messages
            self._declared = {}
            self._has_system = False
            self._seen = 0
            self._stale = True
        seen = self._seen
        if len(messages) == seen:
            return
        for message in messages[seen:]:
            if type(message) is SystemMessage:
                self._has_system = True
                if message.tools_added or message.tools_removed:
                    apply_tool_changes(self._declared, message)
                    self._stale = True
        self._seen = len(messages)

    def _declared_pending(
        self, context: AgentContext, pending: Sequence[AgentMessage], clock: Callable[[], int]
    ) -> Sequence[AgentMessage]:
        last = _last_system_index(pending)
        # What the transcript declares once ``pending`` joins it, the last system message's
        # own tool fields left out: the changes computed here replace them.
        declared = dict(self._declared)
        for index, message in enumerate(pending):
            if index != last and type(message) is SystemMessage:
                apply_tool_changes(declared, message)
        added, removed = tool_changes(list(declared.values()), context.tools)
        if last >= 0:
            message = pending[last]
            assert isinstance(message, SystemMessage)
            if not added and not removed and not message.tools_added and not message.tools_removed:
                return pending  # it declares nothing and nothing changed: keep the caller's object
            updated = attrs.evolve(message, tools_added=added, tools_removed=removed)
            return [*pending[:last], updated, *pending[last + 1 :]]
        content = "" if self._has_system or not context.system_prompt else context.system_prompt
        if not added and not removed and not content:
            return pending
        update = SystemMessage(content, None, added, removed, clock())
        first = next(
            (i for i, message in enumerate(pending) if type(message) is not SystemMessage),
            len(pending),
        )
        return [*pending[:first], update, *pending[first:]]


def _last_system_index(messages: Sequence[AgentMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if type(messages[index]) is SystemMessage:
            return index
    return -1
