"""pi_core messages and tools → the Gemini API's ``contents`` and function declarations.

Thought signatures (Gemini's encrypted record of its reasoning) travel on the part they came
with: ``ThinkingContent.thinking_signature`` for a thought, ``TextContent.text_signature`` for
text, ``ToolCall.thought_signature`` for a function call — as the TypeScript Pi stores them, so
transcripts interchange. They go back only to the model that wrote them.
"""

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
    ToolResultMessage,
    UserMessage,
)
from ._gemini_schema import gemini_schema
from ._openai_convert import IMAGE_OMITTED_TEXT, SEE_IMAGE_TEXT
from ._transcript import is_same_model, prepare_transcript

__all__ = ["SKIP_SIGNATURE", "convert_contents", "convert_system", "convert_tools", "is_gemini_3"]

Wire = dict[str, Any]

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""What Gemini 3 accepts in place of the thought signature of a function call it did not make
(a call of another model): it requires one on the first call of each of its turns."""

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_GEMINI_MAJOR = re.compile(r"^gemini(?:-live)?-(\d+)")


def _inline_tool_images(model: Model) -> bool:
    """True where images of a tool result go inside its function response: Gemini 3 and later,
    and the other models served through this API (only older Gemini needs a turn of its own)."""
    match = _GEMINI_MAJOR.match(model.id.lower())
    return match is None or int(match.group(1)) >= 3


def is_gemini_3(model: Model) -> bool:
    """True for Gemini 3 and later, which want signatures on calls and take tool images inline."""
    match = _GEMINI_MAJOR.match(model.id.lower())
    return match is not None and int(match.group(1)) >= 3


def convert_system(system_prompt: str | None) -> Wire | None:
    """The ``systemInstruction`` content."""
    # The role is the one Google's own SDK gives a system instruction.
    return {"parts": [{"text": system_prompt}], "role": "user"} if system_prompt else None


def convert_tools(tools: list[Tool]) -> list[Wire]:
    """One tool holding every function declaration, its parameters cut to the JSON Schema
    subset Gemini accepts."""
    declarations = [
        {
            "name": tool.name,
            "description": tool.description,
            "parametersJsonSchema": gemini_schema(tool.parameters),
        }
        for tool in tools
    ]
    return [{"functionDeclarations": declarations}]


def convert_contents(model: Model, context: Context) -> list[Wire]:
    """The ``contents`` array. The results of one turn's calls share one user turn (Gemini
    matches them to the calls by position); their images, for models that cannot take them
    inside a function response, follow in a user turn of their own."""
    contents: list[Wire] = []
    responses: list[Wire] = []
    images: list[Wire] = []
    for message in prepare_transcript(context.messages, model):
        if isinstance(message, ToolResultMessage):
            responses.append(_function_response(model, message, images))
            continue
        _flush_results(contents, responses, images)
        if isinstance(message, UserMessage):
            parts = _user_parts(model, message)
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif isinstance(message, AssistantMessage):  # system messages are the instruction
            parts = _model_parts(model, message)
            if parts:
                contents.append({"role": "model", "parts": parts})
    _flush_results(contents, responses, images)
    return contents


def _flush_results(contents: list[Wire], responses: list[Wire], images: list[Wire]) -> None:
    if responses:
        contents.append({"role": "user", "parts": list(responses)})
        responses.clear()
    if images:
        contents.append({"role": "user", "parts": [{"text": "Tool result image:"}, *images]})
        images.clear()


def _user_parts(model: Model, message: UserMessage) -> list[Wire]:
    if isinstance(message.content, str):
        return [{"text": message.content}] if message.content else []
    return [_input_part(model, block) for block in message.content]


def _input_part(model: Model, block: TextContent | ImageContent) -> Wire:
    if isinstance(block, TextContent):
        return {"text": block.text}
    if "image" not in model.input:
        return {"text": IMAGE_OMITTED_TEXT}
    return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}


def _signature(same: bool, signature: str | None) -> Wire:
    """``{"thoughtSignature": ...}`` for a signature this model wrote, else nothing: Gemini
    rejects another model's signature, and signatures must be base64."""
    if same and signature and len(signature) % 4 == 0 and _BASE64.match(signature):
        return {"thoughtSignature": signature}
    return {}


def _model_parts(model: Model, message: AssistantMessage) -> list[Wire]:
    same = is_same_model(message, model)
    parts: list[Wire] = []
    for block in message.content:
        if isinstance(block, TextContent):
            signed = _signature(same, block.text_signature)
            if block.text.strip() or signed:
                parts.append({"text": block.text, **signed})
        elif isinstance(block, ThinkingContent):
            # prepare_transcript turned other models' thinking into text.
            signed = _signature(same, block.thinking_signature)
            if block.thinking.strip() or signed:
                parts.append({"thought": True, "text": block.thinking, **signed})
        else:
            call: Wire = {"functionCall": {"name": block.name, "args": block.arguments}}
            parts.append({**call, **_signature(same, block.thought_signature)})
    _sign_first_call(model, parts)
    return parts


def _sign_first_call(model: Model, parts: list[Wire]) -> None:
    """Gemini 3 refuses a turn whose first function call has no signature."""
    calls = [part for part in parts if "functionCall" in part]
    if calls and is_gemini_3(model) and "thoughtSignature" not in calls[0]:
        calls[0]["thoughtSignature"] = SKIP_SIGNATURE


def _function_response(model: Model, message: ToolResultMessage, images: list[Wire]) -> Wire:
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    if not text.strip():
        text = ""  # blank text says nothing; a placeholder says what there is
    pictures = [block for block in message.content if isinstance(block, ImageContent)]
    inline: list[Wire] = []
    if pictures and "image" in model.input:
        data = [_input_part(model, picture) for picture in pictures]
        if _inline_tool_images(model):
            inline = data
        else:
            images.extend(data)
        text = text or SEE_IMAGE_TEXT
    elif pictures:
        text = f"{text}\n{IMAGE_OMITTED_TEXT}" if text else IMAGE_OMITTED_TEXT
    response: Wire = {"error": text} if message.is_error else {"output": text}
    function_response: Wire = {"name": message.tool_name, "response": response}
    if inline:
        function_response["parts"] = inline
    return {"functionResponse": function_response}
