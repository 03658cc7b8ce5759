"""A scripted model: a stream function that streams given replies, event by event.

Unlike :class:`~pi_core.providers.faux.FauxProvider` it has no randomness and no pacing, and it
can stop at a chosen event and wait there until it is cancelled, so a test can abort the run at
an exact point of the reply.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import AsyncIterator, Iterable, Iterator

import anyio
import anyio.lowlevel

from .. import (
    AssistantContent,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from ..providers._faux_stream import PartialReply

__all__ = ["ScriptedStream", "scripted_reply"]

SCRIPTED_MODEL = Model("scripted-1", "Scripted Model", api="scripted", provider="scripted")
"""The model :class:`ScriptedStream` offers by default."""


def scripted_reply(
    *content: str | AssistantContent, stop_reason: StopReason | None = None
) -> AssistantMessage:
    """A reply for :class:`ScriptedStream`: each string becomes a text block.

    The stop reason defaults to ``"toolUse"`` when the reply calls a tool, else ``"stop"``; an
    ``"error"`` or ``"aborted"`` reply gets an ``error_message`` so that it reads like a real one.
    """
    blocks: list[AssistantContent] = [
        TextContent(block) if isinstance(block, str) else block for block in content
    ]
    if stop_reason is None:
        stop_reason = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    model = SCRIPTED_MODEL
    message = AssistantMessage(blocks, model.api, model.provider, model.id, stop_reason=stop_reason)
    if stop_reason in ("error", "aborted"):
        message.error_message = f"scripted {stop_reason}"
    return message


class ScriptedStream:
    """A stream function answering the n-th model call with the n-th scripted reply.

    Each reply streams as ``start``, then per block ``*_start``, deltas of ``chunk_size``
    characters, ``*_end``, then ``done`` (or ``error`` for a reply whose stop reason is ``error``
    or ``aborted``). When the replies run out, ``default`` answers (if given), else an ``error``
    reply saying so. The events are built as a provider builds them: every event's ``partial``
    is the same live message, which grows as the reply streams and is the final message at
    the end (a tool call's arguments parse from the streamed JSON as they arrive).

    Args:
        replies: the replies, in call order; each call streams a deep copy carrying the
            requested model's api, provider and id.
        default: the reply to every call after the scripted ones.
        block_at: ``(call_index, event_index)``, both from 0: before yielding that event the
            stream sets :attr:`blocked` and waits until it is cancelled (by an abort, say).
        checkpoints: yield to the event loop before each event, as a network stream would.
            Without them a reply streams in one go, like a burst of buffered events.
        chunk_size: characters per delta.
    """

    def __init__(
        self,
        replies: Iterable[AssistantMessage] = (),
        *,
        default: AssistantMessage | None = None,
        block_at: tuple[int, int] | None = None,
        checkpoints: bool = True,
        chunk_size: int = 4,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, not {chunk_size!r}")
        self.replies: list[AssistantMessage] = list(replies)
        self.default: AssistantMessage | None = default
        self.block_at: tuple[int, int] | None = block_at
        self.checkpoints: bool = checkpoints
        self.chunk_size: int = chunk_size
        self.model: Model = SCRIPTED_MODEL
        """A model to give the loop or the Agent; any other model works too."""
        self.contexts: list[Context] = []
        """The context of every call, in call order."""
        self.open_streams: int = 0
        """Replies started and not yet closed: 0 whenever no run is streaming."""
        self._blocked: anyio.Event | None = None

    @property
    def calls(self) -> int:
        """How many times the model has been called."""
        return len(self.contexts)

    async def wait_blocked(self) -> None:
        """Wait until the stream has reached ``block_at``."""
        await self._blocked_event().wait()

    def __call__(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        """The stream function: the call is counted when it is made, as providers do."""
        index = self.calls
        self.contexts.append(context)
        return self._stream(index, self._reply_for(index, model))

    def _reply_for(self, index: int, model: Model) -> AssistantMessage:
        if index < len(self.replies):
            reply = copy.deepcopy(self.replies[index])
        elif self.default is not None:
            reply = copy.deepcopy(self.default)
        else:
            reply = scripted_reply(stop_reason="error")
            reply.error_message = f"ScriptedStream has no reply for call {index}"
        reply.api, reply.provider, reply.model = model.api, model.provider, model.id
        return reply

    async def _stream(
        self, call_index: int, reply: AssistantMessage
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.open_streams += 1
        events = _events_of(reply, self.chunk_size)
        try:
            for event_index in itertools.count():
                if self.checkpoints:
                    await anyio.lowlevel.checkpoint()
                if self.block_at == (call_index, event_index):
                    self._blocked_event().set()
                    await anyio.sleep_forever()
                # Made only now: making an event grows the live partial, which must not show
                # a delta that was never sent.
                event = next(events, None)
                if event is None:
                    return
                yield event
        finally:
            self.open_streams -= 1

    def _blocked_event(self) -> anyio.Event:
        # Created on first use: an anyio.Event needs a running event loop.
        if self._blocked is None:
            self._blocked = anyio.Event()
        return self._blocked


def _events_of(reply: AssistantMessage, chunk_size: int) -> Iterator[AssistantMessageEvent]:
    """The stream protocol events of ``reply``, all carrying one live partial, as a provider's."""
    partial = PartialReply(reply)
    yield partial.start()
    for index, block in enumerate(reply.content):
        yield partial.open_block(block)
        for chunk in _chunks(_streamed_text(block), chunk_size):
            yield partial.add_chunk(index, block, chunk)
        yield partial.close_block(index, block)
    yield partial.done()


def _chunks(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def _streamed_text(block: AssistantContent) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ThinkingContent):
        return block.thinking
    return json.dumps(block.arguments)
