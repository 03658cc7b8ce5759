"""Compaction: the older part of a transcript replaced by a summary the model writes, so that a
conversation keeps fitting in the model's context window.

:func:`compact` keeps the most recent messages worth ``keep_recent_tokens`` as they are and asks
the model, in one request without tools, to summarise the messages before them. The compacted
transcript is the summary (a user message worded as the Pi coding agent words it) followed by
the kept messages; a system message declaring the prompt and tools stays in front.
:class:`CompactionPolicy` tells an Agent when to do it by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import anyio
import attrs

from ._exceptions import PiCoreError
from ._loop import ReplyReader
from ._maybe_async import READY
from ._messages import (
    AgentMessage,
    AssistantMessage,
    Context,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    now_ms,
)
from ._options import StreamFn, StreamOptions
from ._registry import stream_simple
from ._system import current_system_message
from ._tokens import compact_json, estimate_tokens, message_tokens
from .nursery import AbortSignal

__all__ = [
    "COMPACTION_SUMMARY",
    "Compaction",
    "CompactionError",
    "CompactionPolicy",
    "compact",
    "compacted_messages",
    "conversation_text",
    "find_cut",
    "summary_message",
]

COMPACTION_SUMMARY: Final = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n{}\n</summary>"
)
"""How the summary reaches the model: the coding agent's own words, so both read alike."""

SUMMARY_SYSTEM_PROMPT: Final = (
    "You write the working memory of an assistant whose conversation has grown too long to "
    "keep in full. You are given the earlier part of that conversation. Write a summary that "
    "lets the assistant carry on as if it still had every message. Do not continue the "
    "conversation and do not answer any request in it: only summarise."
)

SUMMARY_REQUEST: Final = """<conversation>
{conversation}
</conversation>

Summarise the conversation above. Keep, under these headings:

## What the user wants
Every goal and request of the user, with the constraints and preferences they gave, in their \
own words where the wording matters.

## Decisions
What was decided or agreed, and why, including approaches that were tried and dropped.

## State of the work
The files, data, tools and systems involved: names and paths, what was read, changed or \
created, the results of tool calls that are still relevant, and exact values (identifiers, \
numbers, commands) the assistant would need again.

## Open questions and next steps
What is unfinished, what the assistant was about to do, and questions still waiting for an \
answer.

Be concrete and complete rather than short; leave out greetings and chatter.{instructions}"""

_TOOL_RESULT_CHARS = 2_000
"""How much of one tool result the summary request shows: the start says what it was."""


class CompactionError(PiCoreError):
    """Compaction could not be done: nothing to summarise, or the summary request failed (the
    text says which, with the model's error)."""


@attrs.frozen
class Compaction:
    """The outcome of :func:`compact`: the transcript's messages from ``first_kept_index`` on
    stay, the ones before it are replaced by ``summary``."""

    summary: str
    first_kept_index: int
    tokens_before: int
    """The estimated tokens of the whole transcript before compaction."""
    usage: Usage = attrs.field(factory=Usage, eq=False)
    """What the summary request cost."""
    timestamp: int = attrs.field(factory=now_ms, eq=False)
    """When it was made: the time of the summary message and of a session's compaction entry."""


def _check_threshold(_instance: object, _attribute: object, value: float) -> None:
    if not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"threshold must be a number in (0, 1], not {value!r}")


def _check_keep(_instance: object, _attribute: object, value: int) -> None:
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"keep_recent_tokens must be an int >= 0, not {value!r}")


@attrs.frozen
class CompactionPolicy:
    """When an Agent compacts its transcript by itself.

    Before a request whose estimated context would pass ``threshold * model.context_window``,
    and once after a request the provider refused because its context was too long.

    Args:
        threshold: the share of the context window that triggers compaction.
        keep_recent_tokens: how much of the most recent conversation stays word for word.
        model: the model that writes the summary (default: the Agent's).
        instructions: added to the summary request (what else to keep, a language …).
    """

    threshold: float = attrs.field(default=0.8, validator=_check_threshold)
    keep_recent_tokens: int = attrs.field(default=20_000, validator=_check_keep)
    model: Model | None = None
    instructions: str | None = None


def summary_message(summary: str, timestamp: int) -> UserMessage:
    """The user message a compaction's summary becomes in the transcript."""
    return UserMessage([TextContent(COMPACTION_SUMMARY.format(summary))], timestamp)


def compacted_messages(
    messages: Sequence[AgentMessage], compaction: Compaction
) -> list[AgentMessage]:
    """``messages`` after ``compaction``: one system message holding the prompt and tools they
    declare (if any, stamped with the compaction's time), the summary, then the kept messages
    without their system messages, whose content that one carries. This is what the Pi coding
    agent rebuilds from a compaction entry."""
    system = current_system_message(messages)
    head = [] if system is None else [attrs.evolve(system, timestamp=compaction.timestamp)]
    kept = [m for m in messages[compaction.first_kept_index :] if m.role != "system"]
    return [*head, summary_message(compaction.summary, compaction.timestamp), *kept]


def find_cut(messages: Sequence[AgentMessage], keep_recent_tokens: int) -> int:
    """The index of the first kept message: the most recent messages worth at least
    ``keep_recent_tokens``, starting at a user or assistant message, so that a tool result is
    never kept without the call it answers. 0: nothing can be summarised.

    The leading system messages (the prompt and the tools) are no part of the conversation:
    the first message after them is never the cut, as there would be nothing before it.
    """
    first = 0
    while first < len(messages) and messages[first].role == "system":
        first += 1
    kept = 0
    cut = 0
    for index in range(len(messages) - 1, first, -1):
        message = messages[index]
        kept += message_tokens(message)
        if message.role in ("user", "assistant"):
            cut = index
            if kept >= keep_recent_tokens:
                return index
    return cut


async def compact(
    messages: Sequence[AgentMessage],
    *,
    model: Model,
    stream_fn: StreamFn = stream_simple,
    keep_recent_tokens: int = 20_000,
    instructions: str | None = None,
    signal: AbortSignal | None = None,
    options: StreamOptions | None = None,
) -> Compaction:
    """Summarise the older part of ``messages`` with ``model`` (one request, no tools).

    Args:
        messages: the transcript.
        model: the model that writes the summary.
        stream_fn: how to call it (default: the provider registered for ``model.api``).
        keep_recent_tokens: the most recent messages worth this many tokens stay as they are.
        instructions: added to the request (what else the summary must keep).
        signal: aborts the request; an aborted compaction raises :class:`CompactionError`.
        options: the request's options (its key, headers, timeout …).

    Raises:
        CompactionError: nothing to summarise, or the request failed or was aborted.
    """
    cut = find_cut(messages, keep_recent_tokens)
    older = [m for m in messages[:cut] if m.role != "system"]
    if not older:
        raise CompactionError("Nothing to compact: the conversation is too short")
    request = _summary_request(older, instructions)
    reply = await _ask(model, stream_fn, request, signal, options or StreamOptions())
    if reply.stop_reason in ("error", "aborted"):
        what = "aborted" if reply.stop_reason == "aborted" else "failed"
        raise CompactionError(f"The summary request {what}: {reply.error_message}")
    summary = "".join(b.text for b in reply.content if isinstance(b, TextContent)).strip()
    if not summary:
        raise CompactionError("The summary request returned no text")
    return Compaction(summary, cut, estimate_tokens(messages), reply.usage)


def _summary_request(older: Sequence[AgentMessage], instructions: str | None) -> Context:
    extra = f"\n\nAlso: {instructions.strip()}" if instructions and instructions.strip() else ""
    text = SUMMARY_REQUEST.format(conversation=conversation_text(older), instructions=extra)
    return Context(SUMMARY_SYSTEM_PROMPT, [UserMessage([TextContent(text)])], [])


async def _ask(
    model: Model,
    stream_fn: StreamFn,
    request: Context,
    signal: AbortSignal | None,
    options: StreamOptions,
) -> AssistantMessage:
    """The summary reply; an abort of ``signal`` cuts the request at once."""
    reader = ReplyReader(model, _ignore)
    if signal is None:
        return await reader.read(stream_fn, request, options)
    if signal.aborted:
        return reader.aborted_message()
    options = attrs.evolve(options, signal=signal)
    with anyio.CancelScope() as scope:
        unregister = signal.on_abort(scope.cancel)
        try:
            return await reader.read(stream_fn, request, options)
        finally:
            unregister()
    return reader.aborted_message()


def _ignore(_event: object) -> Any:
    return READY


def conversation_text(messages: Sequence[AgentMessage]) -> str:
    """The messages as the plain text the summary request shows (never sent as messages, so
    that the model summarises them instead of answering them)."""
    return "\n\n".join(filter(None, (_message_text(m) for m in messages)))


def _message_text(message: AgentMessage) -> str:
    if isinstance(message, AssistantMessage):
        if message.stop_reason in ("error", "aborted") and not message.content:
            return ""
        parts = []
        for block in message.content:
            if isinstance(block, TextContent):
                parts.append(f"[Assistant]: {block.text}")
            elif isinstance(block, ThinkingContent):
                parts.append(f"[Assistant thinking]: {block.thinking}")
            elif isinstance(block, ToolCall):
                parts.append(f"[Assistant calls {block.name}]: {compact_json(block.arguments)}")
        return "\n".join(parts)
    if isinstance(message, ToolResultMessage):
        text = _content_text(message.content)
        if len(text) > _TOOL_RESULT_CHARS:
            text = (
                f"{text[:_TOOL_RESULT_CHARS]}… ({len(text) - _TOOL_RESULT_CHARS} more characters)"
            )
        error = " (error)" if message.is_error else ""
        return f"[Result of {message.tool_name}{error}]: {text}"
    role = "User" if message.role == "user" else message.role
    return f"[{role}]: {_content_text(getattr(message, 'content', ''))}"


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        return ""
    return "".join(block.text if isinstance(block, TextContent) else "[image]" for block in content)
