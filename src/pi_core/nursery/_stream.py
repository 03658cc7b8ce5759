"""A producer task feeding a consumer through a bounded memory object stream, with a result."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final, Generic, TypeVar, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._groups import unwrap_single_exception

__all__ = ["EventStream", "open_event_stream"]

E = TypeVar("E")
R = TypeVar("R")

_UNSET: Final = object()
"""The result before the producer has returned one."""


class EventStream(Generic[E, R]):
    """The consumer's side of :func:`open_event_stream`: iterate the events, then ask the result."""

    __slots__ = ("_receive", "_result")

    def __init__(self, receive: MemoryObjectReceiveStream[E]) -> None:
        self._receive = receive
        self._result: object = _UNSET

    def __aiter__(self) -> EventStream[E, R]:
        return self

    async def __anext__(self) -> E:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def result(self) -> R:
        """Drain (and drop) the events not yet read, then return the producer's result.

        Also valid after the ``async with`` block if the producer completed.

        Raises:
            RuntimeError: the producer did not complete (the block was left early).
        """
        async for _ in self:
            pass
        if self._result is _UNSET:
            raise RuntimeError("the run did not complete, so it has no result")
        return cast("R", self._result)


@asynccontextmanager
async def open_event_stream(
    produce: Callable[[Callable[[E], Awaitable[None]]], Awaitable[R]],
    buffer_size: int = 64,
    *,
    stream_type: type[EventStream[E, R]] = EventStream,
) -> AsyncIterator[EventStream[E, R]]:
    """Run ``produce(emit)`` in a child task and hand its events to the block as an async iterator.

    ``emit`` waits while ``buffer_size`` events are unread, so a slow consumer slows the producer
    and nothing is dropped. ``stream_type`` may name a subclass of :class:`EventStream` to hand
    out. Leaving the block before the producer finishes cancels it; an
    exception raised by the producer cancels the block and propagates out of it as itself (see
    :func:`unwrap_single_exception` for several at once).
    """
    if buffer_size < 0:
        raise ValueError(f"buffer_size must be >= 0, not {buffer_size}")
    send, receive = anyio.create_memory_object_stream[E](buffer_size)
    stream = stream_type(receive)
    with unwrap_single_exception(), receive, send:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_produce, produce, send, stream)
            try:
                yield stream
            finally:
                tg.cancel_scope.cancel()


async def _produce(
    produce: Callable[[Callable[[E], Awaitable[None]]], Awaitable[R]],
    send: MemoryObjectSendStream[E],
    stream: EventStream[E, R],
) -> None:
    stream._result = await produce(send.send)
    # Only a completed run ends the stream. After a failure, a consumer waiting for an event must
    # not mistake the end for a clean one (and go on with a truncated run): it stays blocked until
    # the failure cancels it, and the block closes ``send``.
    send.close()
