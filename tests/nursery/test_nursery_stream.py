"""open_event_stream / EventStream: a producer task feeding the block, with a result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel
import pytest

from pi_core.nursery import EventStream, open_event_stream

pytestmark = pytest.mark.anyio

Emit = Callable[[int], Awaitable[None]]


def _counting_producer(count: int, result: str = "done") -> Callable[[Emit], Awaitable[str]]:
    async def produce(emit: Emit) -> str:
        for event in range(count):
            await emit(event)
        return result

    return produce


class _Watched:
    """A producer that emits forever and records how it ended."""

    def __init__(self, *, block_in_emit: bool) -> None:
        self.block_in_emit = block_in_emit
        self.emitted = 0
        self.cancelled = False
        self.finished = False

    async def __call__(self, emit: Emit) -> str:
        try:
            if self.block_in_emit:
                while True:
                    await emit(self.emitted)
                    self.emitted += 1
            await emit(0)
            self.emitted += 1
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        finally:
            self.finished = True
        return "unreachable"


@pytest.mark.parametrize("buffer_size", [0, 1, 64])
async def test_events_arrive_in_order_then_the_result(buffer_size: int) -> None:
    with anyio.fail_after(5):
        async with open_event_stream(_counting_producer(200), buffer_size) as stream:
            assert isinstance(stream, EventStream)
            events = [event async for event in stream]
            assert events == list(range(200))
            assert await stream.result() == "done"
            assert [event async for event in stream] == []


async def test_no_events() -> None:
    with anyio.fail_after(5):
        async with open_event_stream(_counting_producer(0, "empty")) as stream:
            assert [event async for event in stream] == []
            assert await stream.result() == "empty"


@pytest.mark.parametrize("buffer_size", [0, 2])
async def test_result_drains_the_unread_events(buffer_size: int) -> None:
    emitted: list[int] = []

    async def produce(emit: Emit) -> str:
        for event in range(20):
            await emit(event)
            emitted.append(event)
        return "drained"

    with anyio.fail_after(5):
        async with open_event_stream(produce, buffer_size) as stream:
            assert await anext(stream) == 0
            assert await anext(stream) == 1
            assert await stream.result() == "drained"
            assert emitted == list(range(20))
            assert [event async for event in stream] == []
            assert await stream.result() == "drained"


async def test_result_after_the_block() -> None:
    with anyio.fail_after(5):
        async with open_event_stream(_counting_producer(3, "kept")) as stream:
            assert [event async for event in stream] == [0, 1, 2]
        assert await stream.result() == "kept"
        assert await stream.result() == "kept"


async def test_result_after_the_block_when_the_events_were_not_read() -> None:
    with anyio.fail_after(5):
        async with open_event_stream(_counting_producer(3, "kept"), buffer_size=3) as stream:
            await anyio.wait_all_tasks_blocked()  # the producer completes into the buffer
        assert await stream.result() == "kept"
        # The unread events went with the block.
        assert [event async for event in stream] == []


@pytest.mark.parametrize("block_in_emit", [True, False])
async def test_leaving_the_block_early_cancels_the_producer(block_in_emit: bool) -> None:
    producer = _Watched(block_in_emit=block_in_emit)
    with anyio.fail_after(5):
        tasks_before = len(anyio.get_running_tasks())
        async with open_event_stream(producer, buffer_size=2) as stream:
            async for event in stream:
                assert event == 0
                break
            await anyio.wait_all_tasks_blocked()
            finished_inside = producer.finished
        assert not finished_inside
        assert producer.cancelled
        assert producer.finished
        assert len(anyio.get_running_tasks()) == tasks_before
        with pytest.raises(RuntimeError, match="did not complete"):
            await stream.result()
        # Iterating a stream whose block is gone ends at once.
        assert [event async for event in stream] == []


async def test_an_exception_in_the_block_cancels_the_producer_and_escapes_as_itself() -> None:
    producer = _Watched(block_in_emit=True)
    error = LookupError("consumer failed")
    with anyio.fail_after(5):
        with pytest.raises(LookupError, match="consumer failed") as excinfo:
            async with open_event_stream(producer, buffer_size=1) as stream:
                await anext(stream)
                await anyio.wait_all_tasks_blocked()
                raise error
        assert excinfo.value is error
        assert producer.cancelled
        with pytest.raises(RuntimeError, match="did not complete"):
            await stream.result()


async def test_a_producer_exception_escapes_as_itself() -> None:
    error = ValueError("producer failed")

    async def produce(emit: Emit) -> str:
        await emit(1)
        await emit(2)
        raise error

    received: list[int] = []
    reached: list[str] = []
    with anyio.fail_after(5):
        with pytest.raises(ValueError, match="producer failed") as excinfo:
            async with open_event_stream(produce, buffer_size=0) as stream:
                async for event in stream:
                    received.append(event)
                reached.append("after the loop")
        assert excinfo.value is error
        assert received == [1, 2]
        assert reached == []
        with pytest.raises(RuntimeError, match="did not complete"):
            await stream.result()


async def test_a_producer_failure_is_not_a_clean_end_for_a_waiting_consumer() -> None:
    """The consumer is blocked in the iteration when the producer fails: it must be cancelled,
    not told that the stream ended, or it would carry on with a truncated run."""
    error = ValueError("producer failed while the consumer waited")

    async def produce(emit: Emit) -> str:
        await emit(1)
        await anyio.wait_all_tasks_blocked()  # the consumer now waits for the next event
        raise error

    reached: list[list[int]] = []
    with anyio.fail_after(5):
        with pytest.raises(ValueError, match="consumer waited") as excinfo:
            async with open_event_stream(produce) as stream:
                events = [event async for event in stream]
                reached.append(events)
                # A consumer checking what it got must not turn the failure into a group.
                assert events == [1, 2], "truncated"
    assert excinfo.value is error
    assert reached == []


async def test_a_producer_failure_while_the_consumer_waits_for_the_result() -> None:
    error = ValueError("producer failed during result()")

    async def produce(emit: Emit) -> str:
        await emit(1)
        await anyio.wait_all_tasks_blocked()
        raise error

    with anyio.fail_after(5):
        with pytest.raises(ValueError, match="during result") as excinfo:
            async with open_event_stream(produce) as stream:
                await stream.result()
    assert excinfo.value is error


async def test_a_producer_failure_cancels_a_block_that_is_not_iterating() -> None:
    error = ValueError("failed at once")
    cancelled: list[bool] = []

    async def produce(emit: Emit) -> str:
        raise error

    with anyio.fail_after(5):
        with pytest.raises(ValueError, match="failed at once") as excinfo:
            async with open_event_stream(produce):
                try:
                    await anyio.sleep_forever()
                except anyio.get_cancelled_exc_class():
                    cancelled.append(True)
                    raise
    assert excinfo.value is error
    assert cancelled == [True]


async def test_a_producer_failure_cancels_a_consumer_task_inside_the_block() -> None:
    error = ValueError("failed under a consumer task")
    received: list[int] = []
    ended: list[str] = []

    async def produce(emit: Emit) -> str:
        await emit(7)
        await anyio.wait_all_tasks_blocked()
        raise error

    async def consume(stream: EventStream[int, str]) -> None:
        async for event in stream:
            received.append(event)
        ended.append("loop ended")

    with anyio.fail_after(5):
        with pytest.raises(ValueError, match="under a consumer task") as excinfo:
            async with open_event_stream(produce) as stream, anyio.create_task_group() as tg:
                tg.start_soon(consume, stream)
    assert excinfo.value is error
    assert received == [7]
    assert ended == []


@pytest.mark.parametrize("buffer_size", [0, 1, 3])
async def test_the_producer_is_at_most_buffer_size_ahead(buffer_size: int) -> None:
    total = 10
    emitted = 0
    reached = [anyio.Event() for _ in range(total + 1)]
    reached[0].set()

    async def produce(emit: Emit) -> str:
        nonlocal emitted
        for event in range(total):
            await emit(event)
            emitted += 1
            reached[emitted].set()
        return "done"

    async def settle(received: int) -> None:
        # Wait for what the producer may emit, then until it blocks: an emit beyond the bound
        # would be seen.
        await reached[min(received + buffer_size, total)].wait()
        await anyio.wait_all_tasks_blocked()

    with anyio.fail_after(5):
        async with open_event_stream(produce, buffer_size) as stream:
            await settle(0)
            assert emitted == min(buffer_size, total)
            received = 0
            async for event in stream:
                assert event == received
                received += 1
                await settle(received)
                assert emitted == min(received + buffer_size, total)
            assert received == total
            assert await stream.result() == "done"


async def test_outer_cancellation_cancels_the_producer_and_is_not_swallowed() -> None:
    producer = _Watched(block_in_emit=False)
    reached: list[str] = []
    with anyio.fail_after(5):
        tasks_before = len(anyio.get_running_tasks())
        with anyio.CancelScope() as scope:
            async with open_event_stream(producer) as stream:
                assert await anext(stream) == 0
                scope.cancel()
                await anyio.sleep_forever()
            reached.append("after the block")
        assert len(anyio.get_running_tasks()) == tasks_before
    assert scope.cancelled_caught
    assert reached == []
    assert producer.cancelled
    with pytest.raises(RuntimeError, match="did not complete"):
        await stream.result()


@pytest.mark.parametrize("buffer_size", [-1, -5])
async def test_a_negative_buffer_size_is_refused(buffer_size: int) -> None:
    started: list[bool] = []
    entered: list[bool] = []

    async def produce(emit: Emit) -> str:
        started.append(True)
        return "never"

    with pytest.raises(ValueError, match=f"buffer_size must be >= 0, not {buffer_size}"):
        async with open_event_stream(produce, buffer_size=buffer_size):
            entered.append(True)
    assert started == []
    assert entered == []


class _Labelled(EventStream[int, str]):
    __slots__ = ()

    label = "labelled"


async def test_stream_type_names_the_class_handed_out() -> None:
    with anyio.fail_after(5):
        async with open_event_stream(
            _counting_producer(2, "typed"), stream_type=_Labelled
        ) as stream:
            assert type(stream) is _Labelled
            assert [event async for event in stream] == [0, 1]
            assert await stream.result() == "typed"
