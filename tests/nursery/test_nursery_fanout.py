"""fan_out: children of one task group, callbacks one at a time, results in source order."""

from __future__ import annotations

import sys

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pi_core.nursery import AbortController, ConcurrentTaskError, Job, Post, fan_out
from pi_core.nursery._fanout import CHECKPOINT_EVERY

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

pytestmark = pytest.mark.anyio

# anyio_backend is a function-scoped fixture, but only a string: sharing it between examples is fine.
_hypothesis = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _gated_job(gate: anyio.Event, result: int) -> Job[str, int]:
    async def job(post: Post[str]) -> int:
        await gate.wait()
        return result

    return job


def _forever_job(cancelled: set[int], finished: set[int], index: int) -> Job[str, int]:
    async def job(post: Post[str]) -> int:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.add(index)
            raise
        finally:
            finished.add(index)
        return index

    return job


async def test_empty_job_list() -> None:
    calls: list[object] = []

    async def on_message(message: str) -> None:
        calls.append(message)

    async def on_complete(index: int, result: int) -> None:
        calls.append((index, result))

    jobs: list[Job[str, int]] = []
    with anyio.fail_after(5):
        results = await fan_out(jobs, on_message=on_message, on_complete=on_complete)
    assert results == []
    assert calls == []


async def test_returns_the_results_without_callbacks() -> None:
    async def job(post: Post[str]) -> int:
        post("ignored: there is no on_message")
        await anyio.lowlevel.checkpoint()
        return 7

    with anyio.fail_after(5):
        assert await fan_out([job, job]) == [7, 7]


@_hypothesis
@given(order=st.integers(1, 7).flatmap(lambda n: st.permutations(range(n))))
@example(order=[2, 1, 0])
@example(order=[1, 3, 0, 2])
async def test_results_in_source_order_whatever_the_completion_order(order: list[int]) -> None:
    gates = [anyio.Event() for _ in order]
    seen = [anyio.Event() for _ in order]
    jobs = [_gated_job(gate, 100 + index) for index, gate in enumerate(gates)]
    completed: list[tuple[int, int]] = []
    results: list[int] = []

    async def on_complete(index: int, result: int) -> None:
        completed.append((index, result))
        seen[index].set()

    async def run() -> None:
        results.extend(await fan_out(jobs, on_complete=on_complete))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            for index in order:
                gates[index].set()
                await seen[index].wait()
    assert completed == [(index, 100 + index) for index in order]
    assert results == [100 + index for index in range(len(order))]


async def test_callbacks_are_never_entered_concurrently() -> None:
    active = 0
    most_active = 0
    log: list[tuple[str, int]] = []

    async def busy() -> None:
        nonlocal active, most_active
        active += 1
        most_active = max(most_active, active)
        # Every other runnable task runs until it blocks: a concurrent call would enter here.
        await anyio.wait_all_tasks_blocked()
        await anyio.lowlevel.checkpoint()
        active -= 1

    async def on_message(message: int) -> None:
        await busy()
        log.append(("message", message))

    async def on_complete(index: int, result: int) -> None:
        await busy()
        log.append(("complete", index))

    def make_job(index: int) -> Job[int, int]:
        async def job(post: Post[int]) -> int:
            post(index)
            post(index)
            return index

        return job

    jobs = [make_job(index) for index in range(6)]
    with anyio.fail_after(10):
        results = await fan_out(jobs, on_message=on_message, on_complete=on_complete)
    assert results == list(range(6))
    assert most_active == 1
    assert sorted(log) == sorted(
        [("message", i) for i in range(6)] * 2 + [("complete", i) for i in range(6)]
    )


@_hypothesis
@given(
    script=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans()), max_size=25),
    slow_handler=st.booleans(),
)
@example(script=[(0, 3, False), (1, 1, False), (0, 2, True)], slow_handler=True)
async def test_messages_of_a_job_are_handled_before_its_completion(
    script: list[tuple[int, int, bool]], slow_handler: bool
) -> None:
    """``script`` is what the jobs do, one step at a time: (job, how many posts, wait for it).

    A job returns right after its last step, so its completion follows its last posts at once.
    """
    job_count = 4
    gates = [anyio.Event() for _ in script]
    stepped = [anyio.Event() for _ in script]
    steps: list[list[int]] = [[] for _ in range(job_count)]
    for step, (job_index, _, _) in enumerate(script):
        steps[job_index].append(step)
    log: list[tuple[str, int, int]] = []

    def make_job(index: int) -> Job[tuple[int, int], int]:
        async def job(post: Post[tuple[int, int]]) -> int:
            sent = 0
            for step in steps[index]:
                await gates[step].wait()
                for _ in range(script[step][1]):
                    post((index, sent))
                    sent += 1
                stepped[step].set()
            return sent

        return job

    async def on_message(message: tuple[int, int]) -> None:
        if slow_handler:
            await anyio.lowlevel.checkpoint()
            await anyio.lowlevel.checkpoint()
        log.append(("message", *message))

    async def on_complete(index: int, result: int) -> None:
        log.append(("complete", index, result))

    results: list[int] = []

    async def run() -> None:
        jobs = [make_job(index) for index in range(job_count)]
        results.extend(await fan_out(jobs, on_message=on_message, on_complete=on_complete))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            for step, (_, _, wait) in enumerate(script):
                gates[step].set()
                if wait:
                    await stepped[step].wait()

    for index in range(job_count):
        posted = sum(script[step][1] for step in steps[index])
        assert results[index] == posted
        mine = [entry for entry in log if entry[1] == index]
        assert mine == [("message", index, k) for k in range(posted)] + [
            ("complete", index, posted)
        ]


async def test_post_never_blocks_the_job() -> None:
    handler_busy = anyio.Event()
    posted_all = anyio.Event()
    handled: list[int] = []

    async def job(post: Post[int]) -> str:
        post(0)
        await handler_busy.wait()  # the parent is now stuck in on_message(0)
        for message in range(1, 10_000):
            post(message)
        posted_all.set()
        return "done"

    async def on_message(message: int) -> None:
        if message == 0:
            handler_busy.set()
            await posted_all.wait()
        handled.append(message)

    with anyio.fail_after(5):
        assert await fan_out([job], on_message=on_message) == ["done"]
    assert handled == list(range(10_000))


@_hypothesis
@given(
    limit=st.integers(1, 4),
    job_count=st.integers(0, 8),
    picks=st.lists(st.integers(0, 3), min_size=8, max_size=8),
)
async def test_the_limiter_bound_is_never_exceeded(
    limit: int, job_count: int, picks: list[int]
) -> None:
    """``picks`` chooses which running job finishes next (drawn up front: a draw inside a task
    group can end the example with an exception that the task group would wrap)."""
    limiter = anyio.CapacityLimiter(limit)
    gates = [anyio.Event() for _ in range(job_count)]
    nth_start = [anyio.Event() for _ in range(job_count)]
    completed = [anyio.Event() for _ in range(job_count)]
    running: set[int] = set()
    most_running = 0
    starts = 0

    def make_job(index: int) -> Job[str, int]:
        async def job(post: Post[str]) -> int:
            nonlocal most_running, starts
            running.add(index)
            most_running = max(most_running, len(running))
            nth_start[starts].set()
            starts += 1
            await gates[index].wait()
            running.discard(index)
            return index

        return job

    async def on_complete(index: int, result: int) -> None:
        completed[index].set()

    results: list[int] = []

    async def run() -> None:
        jobs = [make_job(index) for index in range(job_count)]
        results.extend(await fan_out(jobs, on_complete=on_complete, limiter=limiter))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            for released in range(job_count):
                # Wait for the starts that must happen, then for everything to settle, so that a
                # start beyond the bound would be seen too.
                await nth_start[min(job_count, limit + released) - 1].wait()
                await anyio.wait_all_tasks_blocked()
                assert len(running) == min(limit, job_count - released)
                assert limiter.borrowed_tokens == len(running)
                candidates = sorted(running)
                chosen = candidates[picks[released] % len(candidates)]
                gates[chosen].set()
                await completed[chosen].wait()
    assert most_running == min(limit, job_count)
    assert results == list(range(job_count))
    assert limiter.borrowed_tokens == 0


def _recording_job(started: list[int], index: int) -> Job[str, int]:
    async def job(post: Post[str]) -> int:
        started.append(index)
        await anyio.lowlevel.checkpoint()
        return index

    return job


@pytest.mark.parametrize("limit", [1, 2, 3])
async def test_jobs_take_the_limiter_in_source_order(limit: int) -> None:
    # A backend may run new tasks in any order (trio reverses them half of the time), so one
    # lucky run proves little: repeat.
    for _ in range(20):
        started: list[int] = []
        jobs = [_recording_job(started, index) for index in range(6)]
        with anyio.fail_after(5):
            results = await fan_out(jobs, limiter=anyio.CapacityLimiter(limit))
        assert results == list(range(6))
        assert started[:limit] == list(range(limit))
        if limit == 1:
            assert started == list(range(6))


async def test_a_raising_job_cancels_the_siblings_and_escapes_as_itself() -> None:
    error = ValueError("job failed")
    cancelled: set[int] = set()
    finished: set[int] = set()

    async def failing(post: Post[str]) -> int:
        await anyio.wait_all_tasks_blocked()
        raise error

    jobs = [
        _forever_job(cancelled, finished, 0),
        failing,
        _forever_job(cancelled, finished, 2),
        _forever_job(cancelled, finished, 3),
    ]
    with anyio.fail_after(5), pytest.raises(ValueError, match="job failed") as excinfo:
        await fan_out(jobs, limiter=anyio.CapacityLimiter(3))
    assert excinfo.value is error
    # Job 3 was waiting for the limiter: the token the failing job frees may still let it start
    # (anyio hands it over before the group is cancelled), but it is cancelled all the same.
    assert {0, 2} <= cancelled <= {0, 2, 3}
    assert finished == cancelled


async def test_a_job_failing_at_once_escapes_as_itself() -> None:
    error = KeyError("at once")
    cancelled: set[int] = set()
    finished: set[int] = set()

    async def failing(post: Post[str]) -> int:
        raise error

    jobs = [failing, _forever_job(cancelled, finished, 1), _forever_job(cancelled, finished, 2)]
    with anyio.fail_after(5), pytest.raises(KeyError) as excinfo:
        await fan_out(jobs)
    assert excinfo.value is error
    # Siblings that start after the failure are cancelled at their first checkpoint.
    assert cancelled <= {1, 2}
    assert finished == cancelled


async def test_a_job_failing_while_the_parent_handles_a_message() -> None:
    error = ValueError("failed while the parent was busy")
    handler_cancelled: list[bool] = []
    in_handler = anyio.Event()

    async def job(post: Post[str]) -> int:
        post("hello")
        await in_handler.wait()
        raise error

    async def on_message(message: str) -> None:
        in_handler.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            handler_cancelled.append(True)
            raise

    with anyio.fail_after(5), pytest.raises(ValueError, match="parent was busy") as excinfo:
        await fan_out([job], on_message=on_message)
    assert excinfo.value is error
    assert handler_cancelled == [True]


async def test_a_raising_on_complete_cancels_the_jobs_and_escapes_as_itself() -> None:
    error = RuntimeError("on_complete failed")
    cancelled: set[int] = set()
    finished: set[int] = set()

    async def quick(post: Post[str]) -> int:
        return -1

    async def on_complete(index: int, result: int) -> None:
        await anyio.wait_all_tasks_blocked()
        raise error

    jobs = [_forever_job(cancelled, finished, 0), quick, _forever_job(cancelled, finished, 2)]
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="on_complete failed") as excinfo:
        await fan_out(jobs, on_complete=on_complete)
    assert excinfo.value is error
    assert cancelled == {0, 2}


async def test_two_raising_jobs_give_one_error_raised_from_their_group() -> None:
    arrived = 0
    both_arrived = anyio.Event()
    errors = [ValueError("first"), TypeError("second")]

    def make_failing(error: Exception) -> Job[str, int]:
        async def failing(post: Post[str]) -> int:
            nonlocal arrived
            arrived += 1
            if arrived == 2:
                both_arrived.set()
            # Shielded, so the first failure cannot cancel the second one out of existence.
            with anyio.CancelScope(shield=True):
                await both_arrived.wait()
            raise error

        return failing

    cancelled: set[int] = set()
    finished: set[int] = set()
    jobs = [make_failing(errors[0]), _forever_job(cancelled, finished, 1), make_failing(errors[1])]
    with anyio.fail_after(5), pytest.raises(ConcurrentTaskError) as excinfo:
        await fan_out(jobs)
    assert excinfo.value.__cause__ is excinfo.value.group
    leaves = _leaves(excinfo.value.group)
    assert len(leaves) == 2
    assert {id(leaf) for leaf in leaves} == {id(error) for error in errors}
    assert cancelled == {1}


async def test_cancellation_from_outside_cancels_every_child() -> None:
    cancelled: set[int] = set()
    finished: set[int] = set()
    handler_cancelled: list[bool] = []
    limiter = anyio.CapacityLimiter(3)
    in_handler = anyio.Event()

    async def poster(post: Post[str]) -> int:
        post("keeps the parent busy")
        await anyio.sleep_forever()
        return -1

    async def on_message(message: str) -> None:
        in_handler.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            handler_cancelled.append(True)
            raise

    jobs = [poster] + [_forever_job(cancelled, finished, index) for index in range(1, 6)]
    reached: list[str] = []

    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            await fan_out(jobs, on_message=on_message, limiter=limiter)
            reached.append("after fan_out")

    with anyio.fail_after(5):
        tasks_before = len(anyio.get_running_tasks())
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await in_handler.wait()
            await anyio.wait_all_tasks_blocked()
            assert finished == set()
            scope.cancel()
        assert len(anyio.get_running_tasks()) == tasks_before
    assert scope.cancelled_caught
    assert reached == []
    assert handler_cancelled == [True]
    # Jobs 1 and 2 held the limiter's other tokens; the rest never got past it.
    assert cancelled == {1, 2}
    assert finished == {1, 2}
    assert limiter.borrowed_tokens == 0


def _leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for member in group.exceptions for leaf in _leaves(member)]
    return [group]


# --- abort through the tasks' own scopes ------------------------------------------------------


def _aborted(index: int) -> int:
    return -100 - index


@pytest.mark.parametrize("with_group", [False, True])
async def test_an_abort_cancels_the_running_jobs_and_the_parent_collects_them(
    with_group: bool,
) -> None:
    controller = AbortController()
    cancelled: set[int] = set()
    finished: set[int] = set()
    completed: list[tuple[int, int]] = []
    first_done = anyio.Event()

    async def quick(post: Post[str]) -> int:
        return 0

    async def on_complete(index: int, result: int) -> None:
        completed.append((index, result))
        if index == 0:
            first_done.set()

    jobs = [quick] + [_forever_job(cancelled, finished, index) for index in (1, 2)]

    async def run(task_group: TaskGroup | None) -> list[int]:
        return await fan_out(
            jobs,
            on_complete=on_complete,
            task_group=task_group,
            signal=controller.signal,
            aborted=_aborted,
        )

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            results: list[list[int]] = []

            async def collect() -> None:
                results.append(await run(tg if with_group else None))

            tg.start_soon(collect)
            await first_done.wait()
            await anyio.wait_all_tasks_blocked()
            controller.abort()
    assert results == [[0, -101, -102]]
    assert cancelled == finished == {1, 2}
    assert completed[0] == (0, 0)
    assert sorted(completed[1:]) == [(1, -101), (2, -102)]
    assert not controller.signal._callbacks  # unregistered once the jobs are done


async def test_jobs_waiting_for_the_limiter_are_aborted_too() -> None:
    controller = AbortController()
    started: list[int] = []

    def job(index: int) -> Job[str, int]:
        async def run(post: Post[str]) -> int:
            started.append(index)
            await anyio.sleep_forever()
            return index

        return run

    async def abort_when_blocked() -> None:
        await anyio.wait_all_tasks_blocked()
        controller.abort()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(abort_when_blocked)
            results = await fan_out(
                [job(index) for index in range(4)],
                limiter=anyio.CapacityLimiter(1),
                signal=controller.signal,
                aborted=_aborted,
            )
    assert results == [-100, -101, -102, -103]
    assert started == [0]


async def test_an_abort_after_the_fan_out_touches_nothing() -> None:
    controller = AbortController()

    async def quick(post: Post[str]) -> int:
        return 7

    results = await fan_out([quick], signal=controller.signal, aborted=_aborted)
    controller.abort()
    assert results == [7]


async def test_a_signal_needs_an_aborted_result() -> None:
    async def quick(post: Post[str]) -> int:
        return 7

    with pytest.raises(TypeError, match="aborted"):
        await fan_out([quick], signal=AbortController().signal)


async def test_a_large_fan_out_yields_while_it_spawns_and_an_abort_stops_the_rest() -> None:
    # Spawning is synchronous work per job: thousands of them would hold the loop, and an
    # abort from another task could land only once all had been spawned (and started).
    count = 5000
    started: list[int] = []
    controller = AbortController()
    first = anyio.Event()

    def job(index: int) -> Job[str, int]:
        async def run(post: Post[str]) -> int:
            started.append(index)
            first.set()
            await anyio.sleep_forever()
            raise AssertionError("not reached")

        return run

    async def abort_at_first_start(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        task_status.started()
        await first.wait()
        controller.abort()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(abort_at_first_start)
            results = await fan_out(
                [job(index) for index in range(count)],
                signal=controller.signal,
                aborted=lambda index: -1,
            )
    assert results == [-1] * count
    assert 0 < len(started) <= 3 * CHECKPOINT_EVERY


async def test_a_parent_handling_many_completions_yields_to_the_loop() -> None:
    # Jobs that all finish in one turn of the event loop leave the parent many completions to
    # handle in a row: it yields every CHECKPOINT_EVERY of them, so other tasks go on.
    count = 1000
    handled = 0
    ticks_seen: list[int] = []

    async def done(post: Post[str]) -> int:
        return 1

    async def on_complete(index: int, result: int) -> None:
        nonlocal handled
        handled += 1

    async def ticker(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        task_status.started()
        while handled < count:
            ticks_seen.append(handled)
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        await tg.start(ticker)
        await fan_out([done] * count, on_complete=on_complete)
    # The ticker ran between completions, not only before the first and after the last (how
    # often depends on the backend's scheduling: some jobs finish while others are spawned).
    assert len({seen for seen in ticks_seen if 0 < seen < count}) >= count // CHECKPOINT_EVERY // 2
