"""The output cap of a request: the model's own limit, fitted into what the context leaves.

A request without ``StreamOptions.max_tokens`` asks for the model's whole output limit, as the
TypeScript original does, but never for more than the context window has room for once the input
is counted: servers refuse ``input + max_tokens`` above the window (OpenRouter before routing,
counting with a tokenizer of its own that may see up to 15 % more tokens than the provider).

The input is estimated without a tokenizer, at 3.5 characters a token (an image as 4 800
characters); when an earlier reply reported its usage, that reply's token count stands for
everything up to it and only the messages after it are estimated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from .._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
)

__all__ = ["clamp_to_context", "estimate_input_tokens", "output_cap"]

_CHARS_PER_TOKEN = 3.5
_IMAGE_CHARS = 4800
_SAFETY_TOKENS = 4096
_SAFETY_RATIO = 0.15
_MIN_OUTPUT_WITH_RATIO = 32768
"""Below this much room the 15 % margin gives way to the fixed one (a small local window)."""


def output_cap(model: Model, context: Context, requested: int | None) -> int | None:
    """``requested`` (else the model's limit) fitted into the context; ``None`` when neither
    is known, so that the server's default applies."""
    wanted = requested or model.max_tokens
    if not wanted:
        return None
    return clamp_to_context(model, context, wanted)


def clamp_to_context(model: Model, context: Context, max_tokens: int) -> int:
    """``max_tokens``, lowered to the room the context window leaves after the input and a
    safety margin (at least one token)."""
    if model.context_window <= 0:
        return max(1, max_tokens)
    used = estimate_input_tokens(context)
    margin = max(_SAFETY_TOKENS, math.ceil(used * _SAFETY_RATIO))
    room = model.context_window - used - margin
    if room < _MIN_OUTPUT_WITH_RATIO:
        room = min(_MIN_OUTPUT_WITH_RATIO, model.context_window - used - _SAFETY_TOKENS)
    return min(max_tokens, max(1, room))


def estimate_input_tokens(context: Context) -> int:
    """The estimated tokens of ``context``'s input (see the module docstring)."""
    prompt = _tokens(_length(context.system_prompt or "")) + _tools_tokens(context.tools)
    messages = context.messages
    last = _last_usage(messages)
    if last is None:
        return prompt + sum(_message_tokens(message) for message in messages)
    index, counted = last
    return counted + sum(_message_tokens(message) for message in messages[index + 1 :])


def _last_usage(messages: Sequence[Message]) -> tuple[int, int] | None:
    """``(index, tokens)`` of the last complete reply whose usage still describes everything
    before it (no message stamped later than it comes before it)."""
    found: tuple[int, int] | None = None
    latest = -math.inf
    for index, message in enumerate(messages):
        if (
            isinstance(message, AssistantMessage)
            and message.timestamp >= latest
            and message.stop_reason not in ("error", "aborted")
        ):
            usage = message.usage
            total = usage.total_tokens or (
                usage.input + usage.output + usage.cache_read + usage.cache_write
            )
            if total > 0:
                found = (index, total)
        latest = max(latest, message.timestamp)
    return found


def _message_tokens(message: Message) -> int:
    if isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += _length(block.text)
            elif isinstance(block, ThinkingContent):
                chars += _length(block.thinking)
            else:
                chars += _length(block.name) + _length(_compact(block.arguments))
        return _tokens(chars)
    content = message.content  # a user message or a tool result: text and images
    if isinstance(content, str):
        return _tokens(_length(content))
    chars = sum(
        _IMAGE_CHARS if isinstance(block, ImageContent) else _length(block.text)
        for block in content
        if isinstance(block, (TextContent, ImageContent))
    )
    return _tokens(chars)


def _tools_tokens(tools: Sequence[Tool]) -> int:
    if not tools:
        return 0
    described = [
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        for tool in tools
    ]
    return _tokens(_length(_compact(described)))


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _length(text: str) -> int:
    """The length JavaScript gives ``text`` (UTF-16 code units), so the estimate is the same."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _tokens(chars: int) -> int:
    return math.ceil(chars / _CHARS_PER_TOKEN)
