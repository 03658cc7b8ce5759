"""pi_core messages and tools → the Anthropic Messages wire format."""

from __future__ import annotations

import re
from typing import Any

from .._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .._options import CacheRetention
from ._openai_convert import IMAGE_OMITTED_TEXT
from ._transcript import is_same_model, prepare_transcript

__all__ = ["cache_control", "convert_messages", "convert_system", "convert_tools", "normalize_id"]

Wire = dict[str, Any]

_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
ERROR_IMAGES_NOTE = "(image attached after the tool results)"
"""Stands in an error result for its images, which follow the turn's results."""


def normalize_id(call_id: str) -> str:
    """A tool call id as Anthropic accepts it (``^[a-zA-Z0-9_-]+$``, at most 64 characters).

    Ids written by other providers can contain other characters; the same rewrite is applied to
    calls and results, so they still match.
    """
    return _ID_UNSAFE.sub("_", call_id)[:64] or "call"


def cache_control(model: Model, retention: CacheRetention | None) -> Wire | None:
    """The ``cache_control`` marker for the prompt cache (``None`` for retention ``"none"``).

    Caching is on by default (``"short"``, five minutes) as upstream; ``"long"`` asks for one hour
    where the server offers it: ``model.compat.supports_long_cache_retention`` when set, else
    api.anthropic.com.
    """
    if retention == "none":
        return None
    if retention == "long" and _long_retention(model):
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _long_retention(model: Model) -> bool:
    if model.compat is not None and model.compat.supports_long_cache_retention is not None:
        return model.compat.supports_long_cache_retention
    return "api.anthropic.com" in (model.base_url or "api.anthropic.com")


def convert_system(system_prompt: str | None, cache: Wire | None) -> list[Wire] | None:
    """The ``system`` blocks, cached so a long system prompt is paid for once."""
    if not system_prompt:
        return None
    block: Wire = {"type": "text", "text": system_prompt}
    if cache is not None:
        block["cache_control"] = cache
    return [block]


def convert_tools(
    tools: list[Tool], *, eager: bool = True, cache: Wire | None = None
) -> list[Wire]:
    """Tools with their JSON Schema as ``input_schema`` (which must be of type object).

    ``eager`` asks the API to stream each call's arguments as they are written
    (``eager_input_streaming``) rather than in one piece at the end; ``cache`` marks the last
    tool, so the tool definitions are cached with the system prompt.
    """
    wire: list[Wire] = []
    for tool in tools:
        item: Wire = {"name": tool.name, "description": tool.description}
        if eager:
            item["eager_input_streaming"] = True
        item["input_schema"] = {"type": "object", **tool.parameters}
        wire.append(item)
    if cache is not None and wire:
        wire[-1]["cache_control"] = cache
    return wire


def convert_messages(model: Model, context: Context, cache: Wire | None) -> list[Wire]:
    """The ``messages`` array; consecutive tool results share one user message."""
    wire: list[Wire] = []
    results: list[Wire] = []
    error_images: list[Wire] = []
    for message in prepare_transcript(context.messages, model, normalize_id):
        if isinstance(message, ToolResultMessage):
            results.append(_tool_result(model, message, error_images))
            continue
        if results:
            wire.append({"role": "user", "content": [*results, *error_images]})
            results, error_images = [], []
        item = _user(model, message) if isinstance(message, UserMessage) else None
        if isinstance(message, AssistantMessage):
            item = _assistant(model, message)
        if item is not None:
            wire.append(item)
    if results:
        wire.append({"role": "user", "content": [*results, *error_images]})
    if cache is not None:
        _mark_last_user_block(wire, cache)
    return wire


def _mark_last_user_block(wire: list[Wire], cache: Wire) -> None:
    """Cache the conversation up to its last user block, so the next turn reads it back."""
    if not wire or wire[-1]["role"] != "user":
        return
    content = wire[-1]["content"]
    if isinstance(content, str):
        wire[-1]["content"] = [{"type": "text", "text": content, "cache_control": cache}]
    elif content and content[-1]["type"] in ("text", "image", "tool_result"):
        content[-1]["cache_control"] = cache


def _user(model: Model, message: UserMessage) -> Wire | None:
    # The API rejects empty text blocks, so blank text is left out.
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content} if message.content.strip() else None
    blocks = [_block(model, block) for block in message.content]
    kept = [block for block in blocks if block["type"] != "text" or block["text"].strip()]
    return {"role": "user", "content": kept} if kept else None


def _block(model: Model, block: TextContent | ImageContent) -> Wire:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if "image" not in model.input:
        return {"type": "text", "text": IMAGE_OMITTED_TEXT}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
    }


def _assistant(model: Model, message: AssistantMessage) -> Wire | None:
    same = is_same_model(message, model)
    blocks = [_assistant_block(block, same) for block in message.content]
    kept = [block for block in blocks if block is not None]
    return {"role": "assistant", "content": kept} if kept else None


def _assistant_block(block: TextContent | ThinkingContent | ToolCall, same: bool) -> Wire | None:
    if isinstance(block, ToolCall):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text} if block.text.strip() else None
    if block.redacted:
        # prepare_transcript already dropped redacted thinking of other models.
        return {"type": "redacted_thinking", "data": block.thinking_signature or ""}
    if same and block.thinking_signature:
        # Sent back even when empty: with display "omitted" the API streams only the signature,
        # and it wants the block back within a tool use loop.
        return {
            "type": "thinking",
            "thinking": block.thinking,
            "signature": block.thinking_signature,
        }
    if not block.thinking.strip():
        return None
    # Thinking without a signature (an aborted stream, another model) is refused as thinking;
    # plain text keeps it readable without inviting the model to imitate thinking tags.
    return {"type": "text", "text": block.thinking}


def _tool_result(model: Model, message: ToolResultMessage, error_images: list[Wire]) -> Wire:
    """A ``tool_result`` block. The API refuses anything but text in an error result, so the
    images of one are announced in its text and follow all the turn's results in
    ``error_images``, under a caption that names the call."""
    wire: Wire = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    if message.is_error and "image" in model.input:
        texts = _texts_with_image_notes(message)
        if texts is not None:
            wire["content"] = "\n".join(texts)
            wire["is_error"] = True
            caption = (
                f"Images from the error result of tool call {message.tool_call_id} "
                f"({message.tool_name}):"
            )
            error_images.append({"type": "text", "text": caption})
            error_images.extend(
                _block(model, block) for block in message.content if isinstance(block, ImageContent)
            )
            return wire
    blocks = [_block(model, block) for block in message.content]
    blocks = [block for block in blocks if block["type"] != "text" or block["text"].strip()]
    if blocks and all(block["type"] == "text" for block in blocks):
        wire["content"] = "\n".join(block["text"] for block in blocks)
    elif blocks:
        wire["content"] = blocks
    if message.is_error:
        wire["is_error"] = True
    return wire


def _texts_with_image_notes(message: ToolResultMessage) -> list[str] | None:
    """The texts of a result, each run of images replaced by a note that they follow; ``None``
    when it has no images."""
    if not any(isinstance(block, ImageContent) for block in message.content):
        return None
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif not texts or texts[-1] != ERROR_IMAGES_NOTE:
            texts.append(ERROR_IMAGES_NOTE)
    return texts
