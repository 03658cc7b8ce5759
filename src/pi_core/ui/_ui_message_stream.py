"""A run as the Vercel AI SDK's UI message stream (protocol version 1).

Each part is one Server-Sent Event, ``data: {json}``; the stream ends with ``data: [DONE]``.
A run is one assistant message: each turn a step (``start-step`` … ``finish-step``), its text,
reasoning and tool calls (input streaming, input available, output, preliminary output for a
tool's progress, output error), steering messages as they enter, tool calls waiting for approval
as approval requests, and ``finish`` with the stop reason and the usage as message metadata.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
from starlette.responses import Response

from .. import (
    Agent,
    AgentBusyError,
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    RunResult,
    SubagentEvent,
    ToolCall,
    UserMessage,
)
from ..nursery import AbortSignal
from ._ag_ui_events import content_text, usage_json
from ._control import limit_json
from ._redaction import public_text
from ._response import RunResponse

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "UIMessageEncoder",
    "ui_message_stream",
    "ui_message_stream_response",
]

UI_MESSAGE_STREAM_HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
"""The header that tells the AI SDK's clients which protocol the stream speaks."""

_FINISH_REASONS = {"stop": "stop", "length": "length", "toolUse": "tool-calls", "error": "error"}


def _part(value: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(value, ensure_ascii=False).encode() + b"\n\n"


class UIMessageEncoder:
    """The parts of one run (a :class:`~pi_core.ui._response.RunEncoder`)."""

    def __init__(self, message_id: str | None = None) -> None:
        self.message_id = message_id or f"msg-{uuid.uuid4().hex}"
        self._turn = 0
        self._replied = False
        self._stop_reason = "stop"
        self._error: str | None = None
        self._child_text: dict[str, str] = {}  # a sub-agent call's id -> its reply so far

    def opening(self) -> list[bytes]:
        """``start``, with the assistant message's id."""
        return [_part({"type": "start", "messageId": self.message_id})]

    def encode(self, event: AgentEvent) -> list[bytes]:
        """The parts of one agent event."""
        kind = event.type
        if kind == "message_update":
            return self._update(event.assistant_message_event)  # type: ignore[union-attr]
        if kind == "turn_start":
            self._turn += 1
            return [_part({"type": "start-step"})]
        if kind == "turn_end":
            return [_part({"type": "finish-step"})]
        if kind == "message_start":
            return self._message_start(event.message)  # type: ignore[union-attr]
        if kind == "message_end":
            return self._message_end(event.message)  # type: ignore[union-attr]
        if kind == "tool_execution_update":
            return self._progress(event.tool_call_id, event.partial_result)  # type: ignore[union-attr]
        if kind == "tool_execution_end":
            return [self._tool_end(event)]
        return []

    def _progress(self, call_id: str, partial: Any) -> list[bytes]:
        """A running call's output so far, as a preliminary output. A sub-agent's is its own
        reply as it streams (what the AI SDK shows of an agent used as a tool); its other events
        (its tools, its turns, its children's) add nothing to that and are left out."""
        details = partial.details
        if type(details) is SubagentEvent:
            inner = details.event
            if len(details.path) > 1 or inner.type not in ("message_update", "message_end"):
                return []
            if not isinstance(inner.message, AssistantMessage):
                return []
            text = content_text(inner.message)
            if not text or text == self._child_text.get(call_id):
                return []
            self._child_text[call_id] = text
        else:
            text = content_text(partial)
        output = {"text": text}
        part = {"type": "tool-output-available", "toolCallId": call_id, "output": output}
        return [_part({**part, "preliminary": True})]

    def _message_start(self, message: AgentMessage) -> list[bytes]:
        if isinstance(message, AssistantMessage):
            self._replied = True
        elif isinstance(message, UserMessage) and self._replied:  # steering, a follow-up
            part = {"type": "text", "text": content_text(message)}
            steering = {"type": "steering-message", "id": f"user-{uuid.uuid4().hex}"}
            return [_part({**steering, "parts": [part]})]
        return []

    def _message_end(self, message: AgentMessage) -> list[bytes]:
        if isinstance(message, AssistantMessage):
            self._stop_reason = message.stop_reason
            if message.stop_reason in ("error", "aborted"):
                self._error = public_text(message.error_message or message.stop_reason)
        return []

    def _id(self, index: int) -> str:
        return f"{self.message_id}-{self._turn}-{index}"

    def _update(self, stream_event: Any) -> list[bytes]:
        kind = stream_event.type
        if kind == "text_delta":
            part = {"type": "text-delta", "id": self._id(stream_event.content_index)}
            return [_part({**part, "delta": stream_event.delta})]
        if kind == "thinking_delta":
            part = {"type": "reasoning-delta", "id": self._id(stream_event.content_index)}
            return [_part({**part, "delta": stream_event.delta})]
        if kind == "toolcall_delta":
            call = stream_event.partial.content[stream_event.content_index]
            part = {"type": "tool-input-delta", "toolCallId": call.id}
            return [_part({**part, "inputTextDelta": stream_event.delta})]
        simple = {
            "text_start": "text-start",
            "text_end": "text-end",
            "thinking_start": "reasoning-start",
            "thinking_end": "reasoning-end",
        }
        if kind in simple:
            return [_part({"type": simple[kind], "id": self._id(stream_event.content_index)})]
        if kind == "toolcall_start":
            call = stream_event.partial.content[stream_event.content_index]
            return [_part(_tool_part("tool-input-start", call))]
        if kind == "toolcall_end":
            call = stream_event.tool_call
            return [_part({**_tool_part("tool-input-available", call), "input": call.arguments})]
        return []

    def _tool_end(self, event: Any) -> bytes:
        text = content_text(event.result)
        if event.is_error:
            error = {"type": "tool-output-error", "toolCallId": event.tool_call_id}
            return _part({**error, "errorText": public_text(text)})
        output = {"type": "tool-output-available", "toolCallId": event.tool_call_id}
        return _part({**output, "output": {"text": text}})

    def finished(self, result: RunResult) -> list[bytes]:
        """The approval requests, then ``error`` or ``abort`` when the run failed, ``finish``
        and ``[DONE]``."""
        parts = [
            _part(
                {
                    "type": "tool-approval-request",
                    "approvalId": call.tool_call_id,
                    "toolCallId": call.tool_call_id,
                    **({"reason": call.reason} if call.reason else {}),
                }
            )
            for call in result.pending
        ]
        if result.outcome == "aborted":
            parts.append(_part({"type": "abort", "reason": self._error or "aborted"}))
        elif result.error_message is not None:
            parts.append(_part({"type": "error", "errorText": self._error or "the run failed"}))
        metadata: dict[str, Any] = {
            "stopReason": self._stop_reason,
            "outcome": str(result.outcome),
            "usage": usage_json(result.usage),
        }
        limit = limit_json(result)
        if limit is not None:
            metadata["limit"] = limit
        reason = _FINISH_REASONS.get(self._stop_reason, "other")
        if result.outcome == "aborted":
            reason = "interrupted"
        finish = {"type": "finish", "finishReason": reason, "messageMetadata": metadata}
        return [*parts, _part(finish), b"data: [DONE]\n\n"]

    def failed(self, message: str) -> list[bytes]:
        """``error``, ``finish`` and ``[DONE]``: the run could not start."""
        finish = {"type": "finish", "finishReason": "error"}
        return [_part({"type": "error", "errorText": message}), _part(finish), b"data: [DONE]\n\n"]


def _tool_part(kind: str, call: ToolCall) -> dict[str, Any]:
    # dynamic: the client knows no static type for our tools.
    return {"type": kind, "toolCallId": call.id, "toolName": call.name, "dynamic": True}


async def ui_message_stream(
    agent: Agent, prompt: str | AgentMessage | Sequence[AgentMessage]
) -> AsyncGenerator[bytes, None]:
    """Run ``agent.prompt(prompt)`` and yield the run as UI message stream parts (bytes of
    Server-Sent Events), ending with ``data: [DONE]``.

    Serve them with the header :data:`UI_MESSAGE_STREAM_HEADERS` (``web_app`` and
    ``ui_message_stream_response`` do). The run is a child task of the iteration: iterate to the
    end, or close the iterator (``contextlib.aclosing``) in the task that iterates it, which
    cancels the run.
    """
    encoder = UIMessageEncoder()
    parts_in, parts_out = anyio.create_memory_object_stream[bytes](16)

    async def run() -> None:
        async def forward(event: AgentEvent, signal: AbortSignal) -> None:
            for part in encoder.encode(event):
                await parts_in.send(part)

        async with parts_in:
            for part in encoder.opening():
                await parts_in.send(part)
            unsubscribe = agent.subscribe(forward)
            try:
                result = await agent.prompt(prompt)
            finally:
                unsubscribe()
            for part in encoder.finished(result):
                await parts_in.send(part)

    async with AsyncExitStack() as stack:
        await stack.enter_async_context(parts_out)
        task_group = await stack.enter_async_context(anyio.create_task_group())
        task_group.start_soon(run)
        async for part in parts_out:
            yield part


def ui_message_stream_response(
    agent: Agent, prompt: str | AgentMessage | Sequence[AgentMessage]
) -> Response:
    """A Starlette (or FastAPI) response streaming :func:`ui_message_stream`'s parts, with the
    protocol's header; the run lives as long as the response (a client that leaves cancels it)."""
    if agent.state.is_streaming:
        raise AgentBusyError("The agent is running a prompt already: one Agent per conversation")
    return RunResponse(
        agent,
        lambda: agent.prompt(prompt),
        UIMessageEncoder(),
        headers=UI_MESSAGE_STREAM_HEADERS,
    )
