"""Run jobs as children of one task group; hear from them one at a time; get results in order."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Final, Generic, TypeVar

import anyio
import anyio.lowlevel
from anyio import TaskHandle
from anyio.abc import TaskGroup

from ._abort import AbortSignal, _nothing
from ._groups import unwrap_single_exception

__all__ = ["Job", "Post", "fan_out"]

M = TypeVar("M")
R = TypeVar("R")

Post = Callable[[M], None]
"""What a job calls to hand a message to the parent: synchronous, never blocks."""

Job = Callable[[Post[M]], Awaitable[R]]
"""One unit of work: an async callable taking a :data:`Post` function and returning a result."""

CHECKPOINT_EVERY: Final = 64
"""The parent yields to the event loop once per this many jobs it spawns, and once per this many
items it handles without waiting: a fan-out of thousands of jobs must not hold the loop."""


class _Done(Generic[R]):
    __slots__ = ("index", "result")

    def __init__(self, index: int, result: R) -> None:
        self.index = index
        self.result = result


class _Mailbox:
    """What the jobs hand the parent, in the order they handed it.

    A deque and an event made only when the parent has to wait: cheaper than a memory object
    stream, whose clones, closes and end-of-stream exceptions a batch would pay for every time.
    """

    __slots__ = ("_waiter", "items")

    def __init__(self) -> None:
        self.items: deque[object] = deque()
        self._waiter: anyio.Event | None = None

    def post(self, item: object) -> None:
        self.items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    async def wait(self) -> None:
        """Return once something was posted (at once if something is there)."""
        while not self.items:
            self._waiter = waiter = anyio.Event()
            await waiter.wait()


async def fan_out(
    jobs: Sequence[Job[M, R]],
    *,
    on_message: Callable[[M], Awaitable[None]] | None = None,
    on_complete: Callable[[int, R], Awaitable[None]] | None = None,
    limiter: anyio.CapacityLimiter | None = None,
    task_group: TaskGroup | None = None,
    signal: AbortSignal | None = None,
    aborted: Callable[[int], R] | None = None,
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

    An abort of ``signal`` cancels the jobs still running (or still waiting for the limiter), each
    through its task's own cancel scope; the result of a job cancelled this way is
    ``aborted(index)``, and the parent goes on collecting. ``aborted`` is required with
    ``signal``.

    If a job raises, the others are cancelled and the exception propagates as itself (with
    ``task_group``, out of that group); several jobs failing at once give one
    :class:`ConcurrentTaskError` (see :func:`unwrap_single_exception`). A message posted after
    its job returned is dropped.
    """
    results: list[R] = [None] * len(jobs)  # type: ignore[list-item]
    if not jobs:
        return results
    if signal is not None and aborted is None:
        raise TypeError("fan_out: a signal needs an aborted(index) result")
    mailbox = _Mailbox()
    if task_group is not None:
        unregister, spawn_rest = _start(task_group, jobs, mailbox, limiter, signal, aborted)
        await _handle_all(mailbox, results, on_message, on_complete, unregister, spawn_rest)
        return results
    with unwrap_single_exception():
        async with anyio.create_task_group() as own_group:
            unregister, spawn_rest = _start(own_group, jobs, mailbox, limiter, signal, aborted)
            await _handle_all(mailbox, results, on_message, on_complete, unregister, spawn_rest)
    return results


def _start(
    task_group: TaskGroup,
    jobs: Sequence[Job[M, R]],
    mailbox: _Mailbox,
    limiter: anyio.CapacityLimiter | None,
    signal: AbortSignal | None,
    aborted: Callable[[int], R] | None,
) -> tuple[Callable[[], None], Callable[[], Awaitable[None]] | None]:
    """Spawn the first :data:`CHECKPOINT_EVERY` jobs; return what unregisters their cancellation
    on an abort, and what spawns the others (``None`` when there are none)."""
    handles: list[TaskHandle[None]] = []
    if signal is None:
        aborted = None
    turn = _spawn(task_group, jobs, 0, mailbox, limiter, aborted, handles, None)
    # One registration for the whole fan-out: the tasks' own scopes do the cancelling, so no job
    # pays for a cancel scope of its own. The list grows as the other jobs spawn.
    unregister = _nothing if signal is None else signal.on_abort(partial(_cancel_all, handles))
    if len(jobs) <= CHECKPOINT_EVERY:
        return unregister, None
    spawn_rest = partial(
        _spawn_rest, task_group, jobs, mailbox, limiter, signal, aborted, handles, turn
    )
    return unregister, spawn_rest


def _spawn(
    task_group: TaskGroup,
    jobs: Sequence[Job[M, R]],
    start: int,
    mailbox: _Mailbox,
    limiter: anyio.CapacityLimiter | None,
    aborted: Callable[[int], R] | None,
    handles: list[TaskHandle[None]],
    turn: anyio.Event | None,
) -> anyio.Event | None:
    """Spawn up to :data:`CHECKPOINT_EVERY` jobs from ``start``; return the last one's turn."""
    for index in range(start, min(start + CHECKPOINT_EVERY, len(jobs))):
        # With a limiter, each job queues for it only once the previous one got a token: the
        # backends do not promise to run new tasks in spawn order (trio may reverse them), and
        # the jobs should start in source order on both.
        next_turn = anyio.Event() if limiter is not None else None
        handles.append(
            task_group.start_soon(
                _run_job, jobs[index], index, mailbox, limiter, turn, next_turn, aborted
            )
        )
        turn = next_turn
    return turn


async def _spawn_rest(
    task_group: TaskGroup,
    jobs: Sequence[Job[M, R]],
    mailbox: _Mailbox,
    limiter: anyio.CapacityLimiter | None,
    signal: AbortSignal | None,
    aborted: Callable[[int], R] | None,
    handles: list[TaskHandle[None]],
    turn: anyio.Event | None,
) -> None:
    """Spawn the jobs past the first chunk, a chunk at a time, yielding to the loop before each:
    spawning thousands at once would hold it. After an abort the rest never start."""
    for start in range(CHECKPOINT_EVERY, len(jobs), CHECKPOINT_EVERY):
        await anyio.lowlevel.checkpoint()
        if signal is not None and signal.aborted:
            assert aborted is not None
            for index in range(start, len(jobs)):
                mailbox.post(_Done(index, aborted(index)))
            return
        turn = _spawn(task_group, jobs, start, mailbox, limiter, aborted, handles, turn)


def _cancel_all(handles: list[TaskHandle[None]]) -> None:
    for handle in handles:
        handle.cancel()  # a no-op for a task that has finished


async def _handle_all(
    mailbox: _Mailbox,
    results: list[R],
    on_message: Callable[[M], Awaitable[None]] | None,
    on_complete: Callable[[int, R], Awaitable[None]] | None,
    unregister: Callable[[], None],
    spawn_rest: Callable[[], Awaitable[None]] | None,
) -> None:
    running = len(results)
    handled = 0
    try:
        if spawn_rest is not None:
            await spawn_rest()
        items = mailbox.items
        while running:
            if not items:
                await mailbox.wait()
            else:
                handled += 1
                if handled % CHECKPOINT_EVERY == 0:
                    await anyio.lowlevel.checkpoint()  # many items came in at once
            item = items.popleft()
            if type(item) is _Done:
                running -= 1
                results[item.index] = item.result
                if on_complete is not None:
                    await on_complete(item.index, item.result)
            elif on_message is not None:
                await on_message(item)  # type: ignore[arg-type]
    finally:
        unregister()


class _Poster:
    """A job's ``post``: hands messages to the mailbox until the job has returned."""

    __slots__ = ("_mailbox", "done")

    def __init__(self, mailbox: _Mailbox) -> None:
        self._mailbox = mailbox
        self.done = False

    def __call__(self, message: object) -> None:
        if not self.done:
            self._mailbox.post(message)


async def _run_job(
    job: Job[M, R],
    index: int,
    mailbox: _Mailbox,
    limiter: anyio.CapacityLimiter | None,
    turn: anyio.Event | None,
    next_turn: anyio.Event | None,
    aborted: Callable[[int], R] | None,
) -> None:
    post = _Poster(mailbox)
    try:
        if limiter is None:
            result = await job(post)
        else:
            if turn is not None:
                await turn.wait()
            async with limiter:
                if next_turn is not None:
                    next_turn.set()
                result = await job(post)
    except BaseException as exc:
        if aborted is None or not isinstance(exc, anyio.get_cancelled_exc_class()):
            raise
        # Cancelled by the abort (or by whatever cancels the parent too, which then never reads
        # it): the parent gets the aborted result and the cancellation goes on up.
        post.done = True
        mailbox.post(_Done(index, aborted(index)))
        raise
    post.done = True
    mailbox.post(_Done(index, result))
