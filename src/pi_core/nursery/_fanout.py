"""Run jobs as children of one task group; hear from them one at a time; get results in order."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._groups import unwrap_single_exception

__all__ = ["Job", "Post", "fan_out"]

M = TypeVar("M")
R = TypeVar("R")

Post = Callable[[M], None]
"""What a job calls to hand a message to the parent: synchronous, never blocks."""

Job = Callable[[Post[M]], Awaitable[R]]
"""One unit of work: an async callable taking a :data:`Post` function and returning a result."""


class _Done(Generic[R]):
    __slots__ = ("index", "result")

    def __init__(self, index: int, result: R) -> None:
        self.index = index
        self.result = result


async def fan_out(
    jobs: Sequence[Job[M, R]],
    *,
    on_message: Callable[[M], Awaitable[None]] | None = None,
    on_complete: Callable[[int, R], Awaitable[None]] | None = None,
    limiter: anyio.CapacityLimiter | None = None,
    task_group: TaskGroup | None = None,
) -> list[R]:
    """Run every job as a child task of one task group and return their results in source order.

    Each job receives ``post``: a synchronous function that hands a message to the parent without
    blocking the job. The parent task awaits ``on_message(message)`` for each posted message and
    ``on_complete(index, result)`` when a job returns, one at a time, in the order they happened:
    neither callback is ever entered concurrently, and every message a job posts is handled before
    its completion. ``limiter`` caps how many jobs run at once.

    The jobs run in a fresh task group, or in ``task_group`` when one is given: a caller that
    fans out many times saves opening a group each time. That group's scope must enclose the
    caller, so that whatever cancels the caller cancels the jobs too.

    If a job raises, the others are cancelled and the exception propagates as itself (with
    ``task_group``, out of that group). Messages posted after their handler's parent stopped
    listening are dropped with the failed run.
    """
    results: list[R] = [None] * len(jobs)  # type: ignore[list-item]
    if not jobs:
        return results
    send, receive = anyio.create_memory_object_stream[object](math.inf)
    with receive:
        if task_group is not None:
            _spawn_all(task_group, jobs, send, limiter)
            await _handle_all(receive, results, on_message, on_complete)
            return results
        with unwrap_single_exception():
            async with anyio.create_task_group() as own_group:
                _spawn_all(own_group, jobs, send, limiter)
                await _handle_all(receive, results, on_message, on_complete)
    return results


def _spawn_all(
    task_group: TaskGroup,
    jobs: Sequence[Job[M, R]],
    send: MemoryObjectSendStream[object],
    limiter: anyio.CapacityLimiter | None,
) -> None:
    with send:
        turn: anyio.Event | None = None
        for index, job in enumerate(jobs):
            # With a limiter, each job queues for it only once the previous one got a token: the
            # backends do not promise to run new tasks in spawn order (trio may reverse them), and
            # the jobs should start in source order on both.
            next_turn = anyio.Event() if limiter is not None else None
            task_group.start_soon(_run_job, job, index, send.clone(), limiter, turn, next_turn)
            turn = next_turn


async def _handle_all(
    receive: MemoryObjectReceiveStream[object],
    results: list[R],
    on_message: Callable[[M], Awaitable[None]] | None,
    on_complete: Callable[[int, R], Awaitable[None]] | None,
) -> None:
    while (item := await _next(receive)) is not _END:
        if type(item) is _Done:
            results[item.index] = item.result
            if on_complete is not None:
                await on_complete(item.index, item.result)
        elif on_message is not None:
            await on_message(item)  # type: ignore[arg-type]


_END = object()


async def _next(receive: MemoryObjectReceiveStream[object]) -> object:
    """The next item, or ``_END`` once every sender is closed; yields only when none is ready.

    ``receive()`` would checkpoint before every item: a batch whose jobs finish in one scheduling
    round would pay a round trip per item for nothing.
    """
    try:
        return receive.receive_nowait()
    except anyio.WouldBlock:
        try:
            return await receive.receive()
        except anyio.EndOfStream:
            return _END
    except anyio.EndOfStream:
        return _END


async def _run_job(
    job: Job[M, R],
    index: int,
    send: MemoryObjectSendStream[object],
    limiter: anyio.CapacityLimiter | None,
    turn: anyio.Event | None,
    next_turn: anyio.Event | None,
) -> None:
    with send:
        post = send.send_nowait
        if limiter is None:
            result = await job(post)
        else:
            if turn is not None:
                await turn.wait()
            async with limiter:
                if next_turn is not None:
                    next_turn.set()
                result = await job(post)
        send.send_nowait(_Done(index, result))
