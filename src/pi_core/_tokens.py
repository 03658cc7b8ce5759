"""A model-free estimate of how many tokens a transcript takes: what compaction measures against
a model's context window before it sends a request.

Characters divided by 3.5, each message rounded up on its own, an image counted as 4 800
characters and a tool call as its name plus its arguments in compact JSON: the estimate the
TypeScript pi-ai library makes, so that both decide alike when a conversation is too long.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ._messages import AgentMessage, ImageContent, TextContent, ThinkingContent, ToolCall

__all__ = ["compact_json", "estimate_tokens", "message_tokens"]

CHARS_PER_TOKEN = 3.5
IMAGE_CHARS = 4_800


def estimate_tokens(messages: Iterable[AgentMessage]) -> int:
    """The estimated tokens of ``messages``: the sum of :func:`message_tokens`."""
    return sum(message_tokens(message) for message in messages)


def message_tokens(message: AgentMessage) -> int:
    """One message's estimate: its characters / 3.5, rounded up."""
    if getattr(message, "role", None) == "system":
        return _system_tokens(message)
    return _tokens(_chars(message))


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def _chars(message: Any) -> int:
    role = getattr(message, "role", None)
    if role == "assistant":
        return sum(_block_chars(block) for block in message.content)
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return len(content)
    if isinstance(content, Sequence):
        return sum(_block_chars(block) for block in content)
    return 0  # a custom message without content counts for nothing


def _block_chars(block: object) -> int:
    if isinstance(block, TextContent):
        return len(block.text)
    if isinstance(block, ThinkingContent):
        return len(block.thinking)
    if isinstance(block, ToolCall):
        return len(block.name) + len(compact_json(block.arguments))
    if isinstance(block, ImageContent):
        return IMAGE_CHARS
    return 0


def _system_tokens(message: Any) -> int:
    """A system message: its text and sections, then each list of tools it adds or removes as
    JSON, each part rounded up on its own."""
    content = message.content
    text = content if isinstance(content, str) else "".join(b.text for b in content)
    sections = getattr(message, "sections", None) or {}
    tokens = _tokens(len(text) + sum(len(value) for value in sections.values() if value))
    for tools in (getattr(message, "tools_added", None), getattr(message, "tools_removed", None)):
        if tools:
            listed = [{"name": t.name, **_tool_fields(t)} for t in tools]
            tokens += _tokens(len(compact_json(listed)))
    return tokens


def _tool_fields(tool: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in ("description", "parameters"):
        if hasattr(tool, name):
            fields[name] = getattr(tool, name)
    return fields


def compact_json(value: object) -> str:
    """``value`` as JavaScript's ``JSON.stringify`` writes it (no spaces)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return "[unserializable]"
