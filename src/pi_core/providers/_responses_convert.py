"""pi_core messages and tools → the OpenAI Responses ``input`` items.

What a reply of the Responses API leaves in an :class:`AssistantMessage`, so that it can be sent
back (the TypeScript Pi stores the same strings, so transcripts interchange):

* a reasoning item is a :class:`ThinkingContent` whose ``thinking_signature`` is the whole item as
  compact JSON (with its ``encrypted_content``); it goes back as it came;
* a message item is a :class:`TextContent` whose ``text_signature`` is
  ``{"v":1,"id":<item id>,"phase":<phase>}``;
* a function call is a :class:`ToolCall` whose id is ``<call_id>|<item id>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

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
from ._openai_convert import IMAGE_OMITTED_TEXT, NO_OUTPUT_TEXT
from ._transcript import is_same_model, prepare_transcript

__all__ = [
    "convert_input",
    "convert_tools",
    "encode_text_signature",
    "normalize_id",
    "split_call_id",
]

Wire = dict[str, Any]

_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_ID = 64


def encode_text_signature(item_id: str, phase: str | None) -> str:
    """The ``text_signature`` of a message item: its id and phase, as compact JSON."""
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return json.dumps(payload, separators=(",", ":"))


def _parse_text_signature(signature: str | None) -> tuple[str | None, str | None]:
    """``(item id, phase)`` of a text signature; an older plain string is the id itself."""
    if not signature:
        return None, None
    if signature.startswith("{"):
        try:
            data = json.loads(signature)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("id"), str):
            phase = data.get("phase")
            return data["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


def _safe_part(part: str) -> str:
    return _ID_UNSAFE.sub("_", part)[:_MAX_ID].rstrip("_") or "call"


def normalize_id(call_id: str) -> str:
    """A tool call id whose parts the API accepts (``[a-zA-Z0-9_-]``, at most 64 characters
    each); ``call_id|item_id`` keeps its two parts, and the item id starts with ``fc``."""
    call, bar, item = call_id.partition("|")
    if not bar:
        return _safe_part(call)
    item = _safe_part(item)
    if not item.startswith("fc"):
        item = _safe_part(f"fc_{item}")
    return f"{_safe_part(call)}|{item}"


def split_call_id(call_id: str) -> tuple[str, str | None]:
    """``(call_id, item id or None)`` of a tool call id."""
    call, bar, item = call_id.partition("|")
    return call, (item or None) if bar else None


def convert_tools(tools: list[Tool]) -> list[Wire]:
    """Tools as Responses function tools, without ``strict``: the API's strict mode only takes
    schemas whose every property is required and closed, and left out it is off."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        for tool in tools
    ]


def convert_input(model: Model, context: Context) -> list[Wire]:
    """The ``input`` array: the system prompt, then the prepared transcript as items."""
    items: list[Wire] = []
    # Reasoning models take instructions as "developer" messages.
    developer = model.reasoning and (
        model.compat is None or model.compat.supports_developer_role is not False
    )
    role = "developer" if developer else "system"
    if context.system_prompt:
        items.append({"role": role, "content": context.system_prompt})
    ids = _ItemIds()
    transcript = prepare_transcript(context.messages, model, normalize_id, keep_own_ids=True)
    for number, message in enumerate(transcript):
        if isinstance(message, UserMessage):
            content = _user_content(model, message)
            if content:
                items.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(model, message, ids.of_message(number)))
        elif isinstance(message, SystemMessage):  # kept in place for this model
            text = render_system_update(message)
            if text:
                items.append({"role": role, "content": text})
        else:
            items.append(_tool_output(model, message))
    return items


def _user_content(model: Model, message: UserMessage) -> list[Wire]:
    if isinstance(message.content, str):
        return [{"type": "input_text", "text": message.content}] if message.content else []
    return [_input_part(model, block) for block in message.content]


def _input_part(model: Model, block: TextContent | ImageContent) -> Wire:
    if isinstance(block, TextContent):
        return {"type": "input_text", "text": block.text}
    if "image" not in model.input:
        return {"type": "input_text", "text": IMAGE_OMITTED_TEXT}
    return {
        "type": "input_image",
        "detail": "auto",
        "image_url": f"data:{block.mime_type};base64,{block.data}",
    }


class _ItemIds:
    """Hands out message item ids that the API accepts: unique in one request, starting with
    ``msg``, at most 64 characters.

    A text without an id of its own (another model's, or one from before ids were kept) gets
    ``msg_pi_<n>`` after its message's place in the transcript (``msg_pi_<n>_<k>`` for the
    message's k-th further text), as the TypeScript original names them, so that both send the
    same request for the same transcript.
    """

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._message = 0
        self._texts = 0

    def of_message(self, number: int) -> _ItemIds:
        """Start handing out the ids of the texts of message ``number``."""
        self._message, self._texts = number, 0
        return self

    def claim(self, wanted: str | None) -> str:
        fallback = f"msg_pi_{self._message}" + (f"_{self._texts}" if self._texts else "")
        self._texts += 1
        if wanted and len(wanted) > _MAX_ID:
            wanted = "msg_" + hashlib.sha256(wanted.encode()).hexdigest()[:40]
        if not wanted or not wanted.startswith("msg") or wanted in self._used:
            wanted = fallback
            while wanted in self._used:
                wanted += "_"
        self._used.add(wanted)
        return wanted


def _assistant_items(model: Model, message: AssistantMessage, ids: _ItemIds) -> list[Wire]:
    same = is_same_model(message, model)
    items: list[Wire] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            reasoning = _reasoning_item(block) if same else None
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(block, TextContent):
            if block.text.strip():
                items.append(_message_item(block, same, ids))
        else:
            items.append(_function_call(block, same))
    # A reasoning item must be followed by the output it led to; one left last (a reply cut off
    # while it reasoned) is refused, so it goes.
    while items and items[-1].get("type") == "reasoning":
        items.pop()
    return items


def _reasoning_item(block: ThinkingContent) -> Wire | None:
    """The reasoning item stored in the signature; ``None`` if there is none."""
    if not block.thinking_signature:
        return None
    try:
        item = json.loads(block.thinking_signature)
    except ValueError:
        return None
    if isinstance(item, dict) and item.get("type") == "reasoning":
        return item
    return None


def _message_item(block: TextContent, same: bool, ids: _ItemIds) -> Wire:
    item_id, phase = _parse_text_signature(block.text_signature) if same else (None, None)
    item: Wire = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": block.text, "annotations": []}],
        "status": "completed",
        "id": ids.claim(item_id),
    }
    if phase:
        item["phase"] = phase
    return item


def _function_call(call: ToolCall, same: bool) -> Wire:
    call_id, item_id = split_call_id(call.id)
    item: Wire = {
        "type": "function_call",
        "call_id": call_id,
        "name": call.name,
        # As JSON.stringify writes it, so that the TypeScript Pi sends the very same request.
        "arguments": json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":")),
    }
    # An item id of another model's reply would be checked against reasoning this model never
    # saw; without one the call stands alone.
    if same and item_id:
        item["id"] = item_id
    return item


def _tool_output(model: Model, message: ToolResultMessage) -> Wire:
    call_id, _ = split_call_id(message.tool_call_id)
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    if not text.strip():
        text = ""  # blank text says nothing, and the API refuses an empty text part
    images = [block for block in message.content if isinstance(block, ImageContent)]
    output: str | list[Wire]
    if images and "image" in model.input:
        output = [_input_part(model, image) for image in images]
        if text:
            output.insert(0, {"type": "input_text", "text": text})
    elif images:
        output = f"{text}\n{IMAGE_OMITTED_TEXT}" if text else IMAGE_OMITTED_TEXT
    else:
        output = text or NO_OUTPUT_TEXT
    return {"type": "function_call_output", "call_id": call_id, "output": output}
