"""pi_core messages and tools → the Chat Completions wire format."""

from __future__ import annotations

import json
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
from ._transcript import prepare_transcript

__all__ = ["IMAGE_OMITTED_TEXT", "convert_messages", "convert_tools"]

IMAGE_OMITTED_TEXT = "(image omitted: this model does not accept images)"
"""Stands in for an image the model cannot take, so it knows something was there."""

_REASONING_FIELDS = ("reasoning_content", "reasoning")

Wire = dict[str, Any]


def convert_tools(tools: list[Tool]) -> list[Wire]:
    """Tools as Chat Completions functions."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


def convert_messages(model: Model, context: Context) -> list[Wire]:
    """The ``messages`` array: the system prompt, then the prepared transcript."""
    wire: list[Wire] = []
    if context.system_prompt:
        # "system" rather than "developer": every compatible server knows it, and OpenAI's
        # reasoning models treat it as a developer message.
        wire.append({"role": "system", "content": context.system_prompt})
    tool_images: list[Wire] = []
    for message in prepare_transcript(context.messages, model):
        if not isinstance(message, ToolResultMessage):
            _flush_tool_images(tool_images, wire)
        if isinstance(message, UserMessage):
            _append_if(wire, _user(model, message))
        elif isinstance(message, AssistantMessage):
            _append_if(wire, _assistant(model, message))
        else:
            wire.append(_tool_result(model, message, tool_images))
    _flush_tool_images(tool_images, wire)
    return wire


def _append_if(wire: list[Wire], item: Wire | None) -> None:
    if item is not None:
        wire.append(item)


def _user(model: Model, message: UserMessage) -> Wire | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    parts = [_part(model, block) for block in message.content]
    return {"role": "user", "content": parts} if parts else None


def _part(model: Model, block: TextContent | ImageContent) -> Wire:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if "image" not in model.input:
        return {"type": "text", "text": IMAGE_OMITTED_TEXT}
    return {"type": "image_url", "image_url": {"url": _data_url(block)}}


def _data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


def _assistant(model: Model, message: AssistantMessage) -> Wire | None:
    texts = [block.text for block in message.content if isinstance(block, TextContent)]
    calls = [block for block in message.content if isinstance(block, ToolCall)]
    text = "\n".join(text for text in texts if text)
    if not text and not calls:
        return None  # servers reject an assistant message with neither content nor calls
    wire: Wire = {"role": "assistant", "content": text or None}
    if calls:
        wire["tool_calls"] = [_call(call) for call in calls]
    _add_reasoning(message, wire)
    return wire


def _add_reasoning(message: AssistantMessage, wire: Wire) -> None:
    """Send this model's own reasoning back under the field it came in (llama.cpp, DeepSeek)."""
    thinking = [
        block
        for block in message.content
        if isinstance(block, ThinkingContent) and not block.redacted and block.thinking
    ]
    if thinking and thinking[0].thinking_signature in _REASONING_FIELDS:
        field = thinking[0].thinking_signature
        assert field is not None
        wire[field] = "\n".join(block.thinking for block in thinking)


def _call(call: ToolCall) -> Wire:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
    }


def _tool_result(model: Model, message: ToolResultMessage, tool_images: list[Wire]) -> Wire:
    """A ``tool`` message; its images wait in ``tool_images`` for one user message after the
    run of tool messages, since nothing may come between the answers to one set of calls."""
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    images = [block for block in message.content if isinstance(block, ImageContent)]
    if images and "image" in model.input:
        tool_images.extend(
            {"type": "image_url", "image_url": {"url": _data_url(image)}} for image in images
        )
        text = text or "(see attached image)"
    elif images:
        text = f"{text}\n{IMAGE_OMITTED_TEXT}" if text else IMAGE_OMITTED_TEXT
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text or "(no output)"}


def _flush_tool_images(tool_images: list[Wire], wire: list[Wire]) -> None:
    if tool_images:
        intro: Wire = {"type": "text", "text": "Attached image(s) from tool result:"}
        wire.append({"role": "user", "content": [intro, *tool_images]})
        tool_images.clear()
