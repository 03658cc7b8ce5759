"""System messages: replaying the prompt and the tools a transcript declares.

The transcript owns the system prompt and the tool declarations. Its leading
:class:`SystemMessage` holds the base prompt and the first tools; each later one appends text,
patches named sections and adds or removes tools. Replaying them in order gives the state at the
end of the transcript, which is what a model that takes one system prompt is sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from ._messages import (
    AgentMessage,
    Context,
    Message,
    SystemMessage,
    TextContent,
    Tool,
    ToolReference,
)

__all__ = [
    "ProviderTranscript",
    "apply_tool_changes",
    "collapse_system_messages",
    "current_system_message",
    "current_system_prompt",
    "current_tools",
    "declaration",
    "initial_system_message",
    "normalize_context",
    "provider_transcript",
    "render_system_update",
    "system_message_text",
    "tool_changes",
]

_BLANK_LINE = "\n\n"

# What a tool's JSON may carry for running it (written for an AgentTool), never declared.
_RUNTIME_KEYS = frozenset({"label", "executionMode"})


def _content_text(content: str | list[TextContent]) -> str:
    if isinstance(content, str):
        return content
    return _BLANK_LINE.join(block.text for block in content if block.text)


def system_message_text(message: SystemMessage) -> str:
    """The prompt one system message states: its content, then its sections' values in order,
    separated by blank lines (empty parts and removed sections are left out)."""
    parts = [_content_text(message.content)]
    if message.sections:
        parts.extend(value for value in message.sections.values() if value is not None)
    return _BLANK_LINE.join(part for part in parts if part)


def declaration(tool: Tool) -> Tool:
    """A tool as a system message declares it: name, description, parameters and any keys
    pi_core does not model, without what only runs it (an :class:`~pi_core.AgentTool`'s
    functions, its ``label`` and ``executionMode``)."""
    extra = tool.extra
    if extra and not _RUNTIME_KEYS.isdisjoint(extra):
        extra = {key: value for key, value in extra.items() if key not in _RUNTIME_KEYS} or None
    if type(tool) is Tool and extra is tool.extra:
        return tool
    return Tool(tool.name, tool.description, tool.parameters, extra=extra)


def _same_declaration(a: Tool, b: Tool) -> bool:
    return (
        a.name == b.name
        and a.description == b.description
        and a.parameters == b.parameters
        and a.extra == b.extra
    )


def apply_tool_changes(tools: dict[str, Tool], message: SystemMessage) -> None:
    """Replay one system message's tool changes on ``tools`` (declarations by name, in
    declared order): its removals, then its additions."""
    for reference in message.tools_removed or ():
        tools.pop(reference.name, None)
    for tool in message.tools_added or ():
        tools.pop(tool.name, None)  # a re-added tool moves to the end, as declared
        tools[tool.name] = tool


class _Replay:
    """The state system messages build up: content parts, sections and tools, in order."""

    __slots__ = ("contents", "found", "sections", "tools")

    def __init__(self) -> None:
        self.contents: list[str] = []
        self.sections: dict[str, str] = {}
        self.tools: dict[str, Tool] = {}
        self.found = False

    def apply(self, message: SystemMessage) -> None:
        self.found = True
        text = _content_text(message.content)
        if text:
            self.contents.append(text)
        if message.sections:
            for name, value in message.sections.items():
                if value is None:
                    self.sections.pop(name, None)
                else:
                    self.sections[name] = value
        if message.tools_removed or message.tools_added:
            apply_tool_changes(self.tools, message)


def _replay(messages: Iterable[AgentMessage]) -> _Replay:
    replay = _Replay()
    for message in messages:
        if type(message) is SystemMessage:
            replay.apply(message)
    return replay


def current_system_message(messages: Iterable[AgentMessage]) -> SystemMessage | None:
    """One system message holding the prompt, sections and tools ``messages`` declare at their
    end (timestamp 0), or ``None`` when they hold no system message."""
    replay = _replay(messages)
    if not replay.found:
        return None
    return SystemMessage(
        _BLANK_LINE.join(replay.contents),
        dict(replay.sections) or None,
        list(replay.tools.values()),
        timestamp=0,
    )


def current_system_prompt(messages: Iterable[AgentMessage]) -> str:
    """The system prompt ``messages`` declare at their end: every system message's content in
    order, then the named sections that are still set, joined by blank lines."""
    replay = _replay(messages)
    return _BLANK_LINE.join([*replay.contents, *replay.sections.values()])


def current_tools(messages: Iterable[AgentMessage]) -> list[Tool]:
    """The tool declarations ``messages`` declare at their end: each system message removes,
    then adds, in order."""
    return list(_replay(messages).tools.values())


def tool_changes(
    declared: Sequence[Tool], wanted: Sequence[Tool]
) -> tuple[list[Tool], list[ToolReference]]:
    """What turns the ``declared`` tools into ``wanted``: the additions and the removals (a
    changed definition is both)."""
    by_name = {tool.name: tool for tool in declared}
    added: list[Tool] = []
    removed: list[ToolReference] = []
    kept: set[str] = set()
    for tool in wanted:
        if tool.name in kept:
            continue  # the first tool of a name is the one a run uses
        kept.add(tool.name)
        old = by_name.get(tool.name)
        new = declaration(tool)
        if old is None:
            added.append(new)
        elif not _same_declaration(old, new):
            removed.append(ToolReference(tool.name))
            added.append(new)
    removed.extend(ToolReference(name) for name in by_name if name not in kept)
    return added, removed


def initial_system_message(
    system_prompt: str | None, tools: Sequence[Tool] = ()
) -> SystemMessage | None:
    """The leading system message of a prompt and tools (timestamp 0), or ``None`` when both
    are empty."""
    if not system_prompt and not tools:
        return None
    return SystemMessage(system_prompt or "", None, [declaration(t) for t in tools], timestamp=0)


def normalize_context(context: Context) -> Context:
    """``context`` with its ``system_prompt`` and ``tools`` shorthand folded into a leading
    system message of its transcript; a context without them is returned as it is."""
    if not context.system_prompt and not context.tools:
        return context
    leading = initial_system_message(context.system_prompt, context.tools)
    assert leading is not None
    return Context(None, [leading, *context.messages])


def collapse_system_messages(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every system message replaced by one leading one that holds their
    replayed state: for models that take system instructions only at the start."""
    leading = current_system_message(messages)
    rest = [message for message in messages if type(message) is not SystemMessage]
    return rest if leading is None else [leading, *rest]


def render_system_update(message: SystemMessage) -> str:
    """The text of a later system message for a model that takes system messages mid-way:
    its content, then each section it replaces or removes."""
    parts = [_content_text(message.content)]
    for name, value in (message.sections or {}).items():
        if value is None:
            parts.append(f'Removed system prompt section "{name}".')
        else:
            parts.append(f'Updated system prompt section "{name}":{_BLANK_LINE}{value}')
    return _BLANK_LINE.join(part for part in parts if part)


@attrs.frozen
class ProviderTranscript:
    """A context as a provider sends it: one system prompt, the tools, and the other messages.

    ``messages`` holds the later system messages too when the provider was asked to keep them
    in place (render each with :func:`render_system_update`).
    """

    system_prompt: str
    tools: list[Tool] = attrs.field(hash=False)
    messages: list[Message] = attrs.field(hash=False)


def provider_transcript(context: Context, *, mid_conversation: bool = False) -> ProviderTranscript:
    """What a provider sends for ``context``, its one home for every provider.

    The context is normalized first (its ``system_prompt`` / ``tools`` shorthand folded in).
    The system prompt is the leading system message rendered with its sections; later system
    messages are collapsed into it, unless ``mid_conversation`` is true (the model accepts
    system messages mid-way), in which case they stay in ``messages`` where they were and the
    prompt is the leading one's alone. The tools are those declared at the end of the transcript.
    """
    messages = normalize_context(context).messages
    tools = current_tools(messages)
    if not mid_conversation:
        rest = [message for message in messages if type(message) is not SystemMessage]
        return ProviderTranscript(current_system_prompt(messages), tools, rest)
    if messages and type(messages[0]) is SystemMessage:
        return ProviderTranscript(system_message_text(messages[0]), tools, list(messages[1:]))
    return ProviderTranscript("", tools, list(messages))
