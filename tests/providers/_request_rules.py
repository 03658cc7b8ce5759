"""Small validators of request bodies: the rules each API enforces on a conversation.

Each ``*_problems(body)`` returns what the API would reject (an empty list when it would
accept the body). They encode the documented rules that a transcript written by another
provider most easily breaks: tool calls answered exactly once and in the right place, ids of the
shape the API wants, thinking and signatures where they must be, schemas the API can read.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "anthropic_problems",
    "chat_completions_problems",
    "gemini_problems",
    "gemini_schema_problems",
    "responses_problems",
]

Body = dict[str, Any]

_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_SKIP_SIGNATURE = "skip_thought_signature_validator"
_GEMINI_SCHEMA_KEYS = {
    "type", "format", "title", "description", "enum", "default", "nullable", "minimum", "maximum",
    "minLength", "maxLength", "pattern", "minItems", "maxItems", "minProperties", "maxProperties",
    "propertyOrdering", "properties", "required", "items", "prefixItems", "anyOf",
    "additionalProperties",
}  # fmt: skip


def _json_object(text: object) -> bool:
    try:
        return isinstance(json.loads(str(text)), dict)
    except ValueError:
        return False


# --- Chat Completions ---------------------------------------------------------------------------


def chat_completions_problems(body: Body) -> list[str]:
    """Every assistant ``tool_calls`` entry is answered by one ``tool`` message right after it;
    no ``tool`` message answers nothing; call ids unique and at most 40 characters; arguments
    are JSON objects."""
    found: list[str] = []
    pending: set[str] = set()
    for number, message in enumerate(body["messages"]):
        role = message["role"]
        if role == "tool":
            if message["tool_call_id"] not in pending:
                found.append(f"messages[{number}] answers no pending call")
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            found.append(f"messages[{number}] comes before the answers to {sorted(pending)}")
            pending = set()
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls and not message.get("content"):
                found.append(f"messages[{number}] is an empty assistant message")
            pending = {call["id"] for call in calls}
            if len(pending) != len(calls) or any(len(call_id) > 40 for call_id in pending):
                found.append(f"messages[{number}] repeats a tool call id or has one too long")
            found += [
                f"messages[{number}] has arguments that are not a JSON object"
                for call in calls
                if not _json_object(call["function"]["arguments"])
            ]
    if pending:
        found.append(f"calls {sorted(pending)} are never answered")
    return found


# --- Anthropic Messages -------------------------------------------------------------------------


def anthropic_problems(body: Body) -> list[str]:
    """Roles alternate from user; no empty or blank text; tool ids of the allowed shape; each
    ``tool_use`` answered by a ``tool_result`` in the very next (user) message; thinking signed."""
    found: list[str] = []
    messages = body["messages"]
    for number, message in enumerate(messages):
        expected = "user" if number % 2 == 0 else "assistant"
        if message["role"] != expected:
            found.append(f"messages[{number}] is {message['role']}, expected {expected}")
        content = message["content"]
        if isinstance(content, str):
            if not content.strip():
                found.append(f"messages[{number}] is blank")
            continue
        if not content:
            found.append(f"messages[{number}] has no content")
        found += _anthropic_blocks(number, content)
        if message["role"] == "assistant":
            found += _anthropic_answers(number, content, messages)
    return found


def _anthropic_blocks(number: int, content: list[Body]) -> list[str]:
    found: list[str] = []
    for block in content:
        kind = block["type"]
        if kind == "text" and not block["text"].strip():
            found.append(f"messages[{number}] has a blank text block")
        if kind in ("tool_use", "tool_result"):
            block_id = block["id"] if kind == "tool_use" else block["tool_use_id"]
            if not _TOOL_ID.match(block_id):
                found.append(f"messages[{number}] has tool id {block_id!r}")
        if kind == "thinking" and not block.get("signature"):
            found.append(f"messages[{number}] has thinking without a signature")
        if kind == "redacted_thinking" and not block.get("data"):
            found.append(f"messages[{number}] has redacted thinking without data")
    return found


def _anthropic_answers(number: int, content: list[Body], messages: list[Body]) -> list[str]:
    calls = [block["id"] for block in content if block["type"] == "tool_use"]
    if not calls:
        return []
    following = messages[number + 1]["content"] if number + 1 < len(messages) else []
    answers = [
        block["tool_use_id"]
        for block in following
        if isinstance(block, dict) and block["type"] == "tool_result"
    ]
    if sorted(answers) != sorted(calls):
        return [f"messages[{number}] calls {calls} but the next message answers {answers}"]
    return []


# --- OpenAI Responses ---------------------------------------------------------------------------


def responses_problems(body: Body) -> list[str]:
    """Item ids unique, of the right prefix and length; reasoning carried with its encrypted
    content and followed by its output; every call answered once, after it; ids of calls of
    the allowed shape; arguments JSON objects."""
    found: list[str] = []
    items = body["input"]
    seen_ids: set[str] = set()
    called: dict[str, int] = {}
    answered: set[str] = set()
    for number, item in enumerate(items):
        kind = item.get("type", "message")
        found += _responses_id(number, item, kind, seen_ids)
        if kind == "reasoning":
            if not item.get("encrypted_content"):
                found.append(f"input[{number}] is reasoning without encrypted content")
            after = items[number + 1] if number + 1 < len(items) else {}
            if after.get("type") not in ("message", "function_call"):
                found.append(f"input[{number}] is reasoning without its following item")
        elif kind == "function_call":
            if not _TOOL_ID.match(item["call_id"]) or item["call_id"] in called:
                found.append(f"input[{number}] has call_id {item['call_id']!r}")
            if not _json_object(item["arguments"]):
                found.append(f"input[{number}] has arguments that are not a JSON object")
            called[item["call_id"]] = number
        elif kind == "function_call_output":
            if item["call_id"] not in called or item["call_id"] in answered:
                found.append(f"input[{number}] answers {item['call_id']!r}, not a pending call")
            else:
                answered.add(item["call_id"])
    found += [f"call {call_id!r} is never answered" for call_id in called.keys() - answered]
    return found


def _responses_id(number: int, item: Body, kind: str, seen: set[str]) -> list[str]:
    item_id = item.get("id")
    if item_id is None:
        return []
    prefix = {"message": "msg", "reasoning": "rs", "function_call": "fc"}.get(kind, "")
    if not item_id.startswith(prefix) or len(item_id) > 64 or item_id in seen:
        return [f"input[{number}] has id {item_id!r}"]
    seen.add(item_id)
    return []


# --- Gemini -------------------------------------------------------------------------------------


def gemini_problems(body: Body) -> list[str]:
    """Roles user / model from user; no empty turn; one kind of data per part; signatures
    base64; a turn with N function calls answered by the next turn's N function responses, in
    order; function responses nowhere else; tool schemas in Gemini's subset."""
    found: list[str] = []
    contents = body["contents"]
    if contents and contents[0]["role"] != "user":
        found.append("the first turn is not the user's")
    for number, content in enumerate(contents):
        if content["role"] not in ("user", "model") or not content["parts"]:
            found.append(f"contents[{number}] is empty or of role {content['role']!r}")
        found += _gemini_parts(number, content["parts"])
        found += _gemini_answers(number, contents)
    for tool in body.get("tools", ()):
        for declaration in tool["functionDeclarations"]:
            found += gemini_schema_problems(declaration["parametersJsonSchema"])
    return found


def _gemini_parts(number: int, parts: list[Body]) -> list[str]:
    found: list[str] = []
    for part in parts:
        data = [
            key for key in ("text", "inlineData", "functionCall", "functionResponse") if key in part
        ]
        if len(data) != 1:
            found.append(f"contents[{number}] has a part with {data}")
        signature = part.get("thoughtSignature")
        if signature is not None and signature != _SKIP_SIGNATURE and not _BASE64.match(signature):
            found.append(f"contents[{number}] has signature {signature!r}")
    return found


def _gemini_answers(number: int, contents: list[Body]) -> list[str]:
    def names(content: Body, kind: str) -> list[str]:
        return [part[kind]["name"] for part in content["parts"] if kind in part]

    calls = names(contents[number], "functionCall")
    responses = names(contents[number], "functionResponse")
    previous = names(contents[number - 1], "functionCall") if number else []
    found: list[str] = []
    if responses and responses != previous:
        found.append(f"contents[{number}] answers {responses} after calls {previous}")
    if calls:
        following = contents[number + 1] if number + 1 < len(contents) else {"parts": []}
        if names(following, "functionResponse") != calls:
            found.append(f"contents[{number}] calls {calls} and the next turn does not answer all")
    return found


def gemini_schema_problems(schema: Any, path: str = "$") -> list[str]:
    """What Gemini would refuse in a parameters schema: unknown keywords, type lists, required
    names that are not properties."""
    if not isinstance(schema, dict):
        return [f"{path} is not a schema"]
    found = [f"{path}.{key}" for key in schema if key not in _GEMINI_SCHEMA_KEYS]
    if isinstance(schema.get("type"), list):
        found.append(f"{path}.type is a list")
    properties = schema.get("properties", {})
    found += [
        f"{path}.required names {name}"
        for name in schema.get("required", ())
        if name not in properties
    ]
    for name, value in properties.items():
        found += gemini_schema_problems(value, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found += gemini_schema_problems(schema[key], f"{path}.{key}")
    for key in ("anyOf", "prefixItems"):
        for index, member in enumerate(schema.get(key, ())):
            found += gemini_schema_problems(member, f"{path}.{key}[{index}]")
    return found
