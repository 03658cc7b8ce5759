"""Make a transcript valid for a provider before it is converted to the wire format.

Providers reject a tool call without a result, a result without its call, and (for some) replayed
reasoning of another model. :func:`prepare_transcript` fixes all of that in one pass and never
mutates the caller's messages:

* Assistant messages that failed or were aborted (``stop_reason`` ``"error"`` / ``"aborted"``)
  are skipped whole: they are incomplete turns (half-written tool calls, reasoning without an
  answer) and the model should continue from the last complete state, as upstream does.
* Every tool call of a kept assistant message gets exactly one result right after it, in the
  calls' order: a missing one is synthesized as an error result ``"No result provided"``.
  Results that answer no pending call (the calls of a skipped message, duplicates, results
  after the conversation moved on) are dropped.
* System messages left in the transcript (for a model that takes them mid-way) stay where they
  are, except that one arriving between a tool call and its result waits until after the
  results, which must follow their call.
* Thinking of the same model (same provider, api and model id) is kept as it is. Thinking of
  another model is dropped: its signature or encrypted payload is only readable by the model
  that wrote it, and sent as plain text it would read as something this model said. Tool call
  thought signatures are dropped across models for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from .._messages import (
    AssistantMessage,
    Message,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "NO_RESULT_TEXT",
    "ConversationMessage",
    "PreparedMessage",
    "is_same_model",
    "prepare_transcript",
]

ConversationMessage = UserMessage | AssistantMessage | ToolResultMessage
"""The turns of a conversation: system messages reach a provider as its system prompt
(:func:`pi_core.lowlevel.provider_transcript`), or, for a model that takes them mid-way, as the
later system messages that :func:`prepare_transcript` passes through."""
PreparedMessage = ConversationMessage | SystemMessage

NO_RESULT_TEXT = "No result provided"
"""The text of a synthesized result for a tool call that has none (upstream's words)."""

IdMap = Callable[[str], str]


def is_same_model(message: AssistantMessage, model: Model) -> bool:
    """True when ``message`` was written by ``model`` (provider, api and id all match)."""
    return (
        message.provider == model.provider
        and message.api == model.api
        and message.model == model.id
    )


def prepare_transcript(
    messages: Sequence[Message],
    model: Model,
    normalize_id: IdMap | None = None,
    *,
    keep_own_ids: bool = False,
) -> list[PreparedMessage]:
    """The messages a provider may see for ``model`` (see the module docstring).

    The results of an assistant message's calls follow it in the calls' order, whatever order
    they came in. ``normalize_id`` rewrites tool call ids, in calls and results alike, for
    providers with rules on their shape; with ``keep_own_ids`` only the ids of other models'
    messages, so that a model's own ids go back exactly as it wrote them (for a provider that
    checks them against what it remembers of its reply).
    """
    fix_id: IdMap = normalize_id or _identity
    result: list[PreparedMessage] = []
    pending: dict[str, ToolCall] = {}
    answers: dict[str, ToolResultMessage] = {}
    renamed: dict[str, str] = {}
    held: list[PreparedMessage] = []
    """System messages that arrived while calls waited for their results."""
    for message in messages:
        if isinstance(message, ToolResultMessage):
            call_id = renamed.get(message.tool_call_id, message.tool_call_id)
            if call_id in pending and call_id not in answers:
                answers[call_id] = attrs.evolve(message, tool_call_id=call_id)
            continue
        if isinstance(message, SystemMessage) and pending:
            held.append(message)
            continue
        _answer_calls(pending, answers, result)
        result.extend(held)
        held.clear()
        if isinstance(message, (UserMessage, SystemMessage)):
            result.append(message)
        elif isinstance(message, AssistantMessage) and message.stop_reason not in (
            "error",
            "aborted",
        ):
            keep = keep_own_ids and is_same_model(message, model)
            kept = _convert_assistant(message, model, _identity if keep else fix_id)
            pending = {block.id: block for block in kept.content if isinstance(block, ToolCall)}
            renamed = dict(zip(_call_ids(message), _call_ids(kept), strict=True))
            result.append(kept)
    _answer_calls(pending, answers, result)
    result.extend(held)
    return result


def _call_ids(message: AssistantMessage) -> list[str]:
    return [block.id for block in message.content if isinstance(block, ToolCall)]


def _answer_calls(
    pending: dict[str, ToolCall],
    answers: dict[str, ToolResultMessage],
    result: list[PreparedMessage],
) -> None:
    """Append one result per pending call, in call order (an error result where none came)."""
    for call in pending.values():
        answer = answers.get(call.id) or ToolResultMessage(
            call.id, call.name, [TextContent(NO_RESULT_TEXT)], is_error=True
        )
        result.append(answer)
    pending.clear()
    answers.clear()


def _convert_assistant(message: AssistantMessage, model: Model, fix_id: IdMap) -> AssistantMessage:
    same = is_same_model(message, model)
    content: list[TextContent | ThinkingContent | ToolCall] = []
    for block in message.content:
        if isinstance(block, ToolCall):
            signature = block.thought_signature if same else None
            content.append(ToolCall(fix_id(block.id), block.name, block.arguments, signature))
        elif isinstance(block, ThinkingContent) and not same:
            continue  # another model's reasoning: neither readable by this one nor its words
        else:
            content.append(block)
    return attrs.evolve(message, content=content)


def _identity(value: str) -> str:
    return value
