"""Helpers for provider tests: collect a stream and check it against the stream protocol."""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Sequence
from typing import Any

import anyio

from pi_core import (
    AssistantMessage,
    AssistantMessageEvent,
    StreamDone,
    StreamError,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

__all__ = ["check_protocol", "collect", "final_message", "kinds"]

STREAM_DEADLINE = 10.0
"""No stream of these tests may take longer; a hang fails instead of blocking the suite."""

_STARTS = {TextStart: "text", ThinkingStart: "thinking", ToolCallStart: "toolcall"}
_DELTAS = {TextDelta: "text", ThinkingDelta: "thinking", ToolCallDelta: "toolcall"}
_ENDS = {TextEnd: "text", ThinkingEnd: "thinking", ToolCallEnd: "toolcall"}


async def collect(
    stream: AsyncIterable[AssistantMessageEvent],
    on_event: Callable[[AssistantMessageEvent], Any] | None = None,
) -> list[AssistantMessageEvent]:
    """Every event of ``stream`` (within :data:`STREAM_DEADLINE` seconds), protocol-checked.

    ``on_event`` sees each event as it arrives, while its ``partial`` is current.
    """
    events: list[AssistantMessageEvent] = []
    with anyio.fail_after(STREAM_DEADLINE):
        async for event in stream:
            events.append(event)
            if on_event is not None:
                on_event(event)
    check_protocol(events)
    return events


def kinds(events: Sequence[AssistantMessageEvent]) -> list[str]:
    """The ``type`` strings of ``events``."""
    return [event.type for event in events]


def final_message(events: Sequence[AssistantMessageEvent]) -> AssistantMessage:
    """The message of the terminal event."""
    last = events[-1]
    assert isinstance(last, StreamDone | StreamError)
    return last.message if isinstance(last, StreamDone) else last.error


def check_protocol(events: Sequence[AssistantMessageEvent]) -> None:
    """Assert the stream protocol: ``start`` first (unless the stream is a lone error), blocks
    opened in content order with their deltas and end in between, one block at a time, and
    exactly one terminal event, last. Blocks may stay open only when the terminal is an error."""
    assert events, "a stream has at least its terminal event"
    *body, last = events
    assert isinstance(last, StreamDone | StreamError), f"last event is {last.type}"
    if body:
        assert isinstance(body[0], StreamStart), f"first event is {body[0].type}"
    open_block: tuple[int, str] | None = None
    started = 0
    for event in body[1:]:
        kind = type(event)
        index = getattr(event, "content_index", None)
        if kind in _STARTS:
            assert open_block is None, f"{event.type} while block {open_block} is open"
            assert index == started, f"{event.type} at {index}, expected {started}"
            open_block, started = (started, _STARTS[kind]), started + 1
        elif kind in _DELTAS or kind in _ENDS:
            label = _DELTAS.get(kind) or _ENDS[kind]
            assert open_block == (index, label), f"{event.type}({index}) outside its block"
            if kind in _ENDS:
                open_block = None
        else:
            raise AssertionError(f"unexpected {event.type} before the terminal event")
    if isinstance(last, StreamDone):
        assert open_block is None, f"done with block {open_block} still open"
        assert last.message.stop_reason == last.reason
    else:
        assert last.error.stop_reason == last.reason
        assert last.error.error_message
