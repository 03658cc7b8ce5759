"""pi_core messages and tools → the Chat Completions wire format."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .._compat import ModelCompat
from .._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .._system import render_system_update
from ._transcript import prepare_transcript

__all__ = [
    "IMAGE_OMITTED_TEXT",
    "NO_OUTPUT_TEXT",
    "SEE_IMAGE_TEXT",
    "convert_messages",
    "convert_tools",
    "normalize_call_id",
]

IMAGE_OMITTED_TEXT = "(image omitted: this model does not accept images)"
"""Stands in for an image the model cannot take, so it knows something was there."""
NO_OUTPUT_TEXT = "(no tool output)"
"""The text of a tool result that has neither text nor images (servers refuse empty content)."""
SEE_IMAGE_TEXT = "(see attached image)"
"""The text of a tool result that has images but no text of its own."""

_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_BRIDGE_TEXT = "I have processed the tool results."
_MAX_CALL_ID = 40
_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")

Wire = dict[str, Any]


def normalize_call_id(call_id: str) -> str:
    """A tool call id OpenAI accepts (at most 40 characters of ``[a-zA-Z0-9_-]``).

    Ids of other providers can be composite (``call_abc|fc_…`` from OpenAI Responses) or long;
    the first part of a composite id is kept, a long id keeps its start and gains a short hash
    of the whole, so two long ids never merge. Applied alike to calls and their results.
    """
    if "|" in call_id:
        call_id = call_id.split("|", 1)[0]
    elif len(call_id) <= _MAX_CALL_ID and not _ID_UNSAFE.search(call_id):
        return call_id
    safe = _ID_UNSAFE.sub("_", call_id) or "call"
    if len(safe) <= _MAX_CALL_ID:
        return safe
    digest = hashlib.sha256(call_id.encode("utf-8", "replace")).hexdigest()[:8]
    return f"{safe[: _MAX_CALL_ID - 9]}_{digest}"


def convert_tools(tools: list[Tool]) -> list[Wire]:
    """Tools as Chat Completions functions, without ``strict`` (off when left out; a server
    that does not know the field may refuse it)."""
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


def convert_messages(model: Model, context: Context, compat: ModelCompat) -> list[Wire]:
    """The ``messages`` array: the system prompt, then the prepared transcript."""
    wire: list[Wire] = []
    role = "developer" if model.reasoning and compat.supports_developer_role else "system"
    if context.system_prompt:
        wire.append({"role": role, "content": context.system_prompt})
    tool_images: list[Wire] = []
    after_results = False
    for message in prepare_transcript(context.messages, model, normalize_call_id):
        if tool_images and not isinstance(message, ToolResultMessage):
            _flush_tool_images(tool_images, wire, compat)
            after_results = False  # a user message with the images came after the results
        if isinstance(message, UserMessage):
            if after_results and compat.requires_assistant_after_tool_result:
                wire.append({"role": "assistant", "content": _BRIDGE_TEXT})
            _append_if(wire, _user(model, message))
        elif isinstance(message, AssistantMessage):
            _append_if(wire, _assistant(model, message, compat))
        elif isinstance(message, SystemMessage):  # kept in place for this server
            text = render_system_update(message)
            if text:
                wire.append({"role": role, "content": text})
        else:
            wire.append(_tool_result(model, message, tool_images, compat))
        after_results = isinstance(message, ToolResultMessage)
    if tool_images:
        _flush_tool_images(tool_images, wire, compat)
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


def _assistant(model: Model, message: AssistantMessage, compat: ModelCompat) -> Wire | None:
    texts = [block.text for block in message.content if isinstance(block, TextContent)]
    calls = [block for block in message.content if isinstance(block, ToolCall)]
    thinking = [
        block
        for block in message.content
        if isinstance(block, ThinkingContent) and not block.redacted and block.thinking.strip()
    ]
    text = "\n".join(text for text in texts if text)
    if compat.requires_thinking_as_text and thinking:
        text = "\n\n".join([*(block.thinking for block in thinking), *([text] if text else [])])
        thinking = []
    if not text and not calls:
        return None  # servers reject an assistant message with neither content nor calls
    # Servers that want a string (llama.cpp, vLLM …) get "" beside tool calls, the others null.
    needs_string = compat.requires_non_null_assistant_content
    empty = "" if needs_string or compat.requires_assistant_after_tool_result else None
    wire: Wire = {"role": "assistant", "content": text or empty}
    if calls:
        wire["tool_calls"] = [_call(call) for call in calls]
    _add_reasoning(thinking, wire)
    if compat.requires_reasoning_content_on_assistant_messages and model.reasoning:
        wire.setdefault("reasoning_content", "")
    return wire


def _add_reasoning(thinking: list[ThinkingContent], wire: Wire) -> None:
    """Send this model's own reasoning back under the field it came in (llama.cpp, DeepSeek)."""
    if thinking and thinking[0].thinking_signature in _REASONING_FIELDS:
        field = thinking[0].thinking_signature
        assert field is not None
        wire[field] = "\n".join(block.thinking for block in thinking)


def _call(call: ToolCall) -> Wire:
    return {
        "id": call.id,
        "type": "function",
        # As JSON.stringify writes it, so that the TypeScript Pi sends the very same request.
        "function": {
            "name": call.name,
            "arguments": json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":")),
        },
    }


def _tool_result(
    model: Model, message: ToolResultMessage, tool_images: list[Wire], compat: ModelCompat
) -> Wire:
    """A ``tool`` message; its images wait in ``tool_images`` for one user message after the
    run of tool messages, since nothing may come between the answers to one set of calls."""
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    if not text.strip():
        text = ""  # blank text says nothing; a placeholder says what there is
    images = [block for block in message.content if isinstance(block, ImageContent)]
    if images and "image" in model.input:
        tool_images.extend(
            {"type": "image_url", "image_url": {"url": _data_url(image)}} for image in images
        )
        text = text or SEE_IMAGE_TEXT
    elif images:
        text = f"{text}\n{IMAGE_OMITTED_TEXT}" if text else IMAGE_OMITTED_TEXT
    result: Wire = {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "content": text or NO_OUTPUT_TEXT,
    }
    if compat.requires_tool_result_name and message.tool_name:
        result["name"] = message.tool_name
    return result


def _flush_tool_images(tool_images: list[Wire], wire: list[Wire], compat: ModelCompat) -> None:
    """Send the images of the last tool results as one user message."""
    if compat.requires_assistant_after_tool_result:
        wire.append({"role": "assistant", "content": _BRIDGE_TEXT})
    intro: Wire = {"type": "text", "text": "Attached image(s) from tool result:"}
    wire.append({"role": "user", "content": [intro, *tool_images]})
    tool_images.clear()
