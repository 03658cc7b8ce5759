"""Message contents as the GenAI semantic conventions record them (JSON, parts by type)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .. import (
    AgentToolResult,
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)
from ..lowlevel import provider_transcript

__all__ = ["finish_reason", "input_messages", "output_messages", "system_instructions", "to_json"]

_FINISH_REASONS = {"toolUse": "tool_call"}


def finish_reason(stop_reason: str) -> str:
    """A stop reason as a finish reason: ``toolUse`` is ``tool_call``; the rest stay as they are."""
    return _FINISH_REASONS.get(stop_reason, stop_reason)


def to_json(value: Any) -> str:
    """Compact JSON, with anything JSON cannot hold written as its ``str``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def system_instructions(context: Context) -> str | None:
    """``gen_ai.system_instructions`` of a model call: the system prompt its transcript
    declares, or ``None`` without one."""
    prompt = provider_transcript(context).system_prompt
    if not prompt:
        return None
    return to_json([{"type": "text", "content": prompt}])


def input_messages(context: Context) -> str:
    """``gen_ai.input.messages``: the messages the model was sent, without the system messages
    (their prompt is the system instructions)."""
    messages = provider_transcript(context).messages
    return to_json([_message(message) for message in messages])


def output_messages(message: AssistantMessage) -> str:
    """``gen_ai.output.messages``: the reply, with its finish reason."""
    entry = _message(message)
    entry["finish_reason"] = finish_reason(message.stop_reason)
    return to_json([entry])


def tool_result_text(result: AgentToolResult) -> str:
    """A tool result's content as the text a span records (images by their MIME type)."""
    return "\n".join(_block_text(block) for block in result.content)


def _message(message: Any) -> dict[str, Any]:
    if isinstance(message, ToolResultMessage):
        response = "\n".join(_block_text(block) for block in message.content)
        part = {"type": "tool_call_response", "id": message.tool_call_id, "response": response}
        return {"role": "tool", "parts": [part]}
    content = message.content
    blocks: Iterable[Any] = [TextContent(content)] if isinstance(content, str) else content
    return {"role": message.role, "parts": [_part(block) for block in blocks]}


def _part(block: Any) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "content": block.text}
    if isinstance(block, ThinkingContent):
        return {"type": "reasoning", "content": block.thinking}
    if isinstance(block, ToolCall):
        return {
            "type": "tool_call",
            "id": block.id,
            "name": block.name,
            "arguments": block.arguments,
        }
    if isinstance(block, ImageContent):
        return {
            "type": "blob",
            "modality": "image",
            "mime_type": block.mime_type,
            "content": block.data,
        }
    return {"type": str(getattr(block, "type", "unknown"))}


def _block_text(block: TextContent | ImageContent) -> str:
    if isinstance(block, TextContent):
        return block.text
    return f"[image: {block.mime_type}]"
