"""AbortController / AbortSignal / AbortScope: abort as a cancel scope."""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest

from pi_core.nursery import AbortController, AbortScope, AbortSignal

pytestmark = pytest.mark.anyio


# --- state ------------------------------------------------------------------------------------


def test_fresh_signal_is_not_aborted() -> None:
    controller = AbortController()
    signal = controller.signal
    assert isinstance(signal, AbortSignal)
    assert controller.signal is signal
    assert signal.aborted is False
    assert signal.reason is None
    assert "not aborted" in repr(signal)


def test_abort_sets_the_flag_and_the_reason_defaults_to_none() -> None:
    controller = AbortController()
    controller.abort()
    assert controller.signal.aborted is True
    assert controller.signal.reason is None


def test_abort_keeps_the_reason() -> None:
    controller = AbortController()
    reason = object()
    controller.abort(reason)
    assert controller.signal.aborted is True
    assert controller.signal.reason is reason
    assert "aborted" in repr(controller)


@pytest.mark.parametrize(
    ("first", "second"), [("first", "second"), (None, "second"), ("first", None)]
)
def test_first_reason_wins(first: object, second: object) -> None:
    controller = AbortController()
    controller.abort(first)
    controller.abort(second)
    controller.abort()
    assert controller.signal.aborted is True
    assert controller.signal.reason == first


# --- on_abort ---------------------------------------------------------------------------------


def test_callbacks_run_once_in_registration_order() -> None:
    controller = AbortController()
    calls: list[str] = []
    for name in ("a", "b", "c", "d"):
        controller.signal.on_abort(lambda name=name: calls.append(name))  # type: ignore[misc]
    assert calls == []
    controller.abort()
    assert calls == ["a", "b", "c", "d"]
    controller.abort("again")
    assert calls == ["a", "b", "c", "d"]


def test_callbacks_see_the_signal_already_aborted() -> None:
    controller = AbortController()
    seen: list[tuple[bool, object]] = []
    signal = controller.signal
    signal.on_abort(lambda: seen.append((signal.aborted, signal.reason)))
    controller.abort("why")
    assert seen == [(True, "why")]


def test_unregistered_callback_is_not_called() -> None:
    controller = AbortController()
    calls: list[str] = []
    controller.signal.on_abort(lambda: calls.append("kept 1"))
    unregister = controller.signal.on_abort(lambda: calls.append("dropped"))
    controller.signal.on_abort(lambda: calls.append("kept 2"))
    unregister()
    unregister()  # harmless the second time
    controller.abort()
    assert calls == ["kept 1", "kept 2"]
    unregister()  # and after the abort
    assert controller.signal._callbacks == {}


def test_on_abort_after_abort_calls_at_once() -> None:
    controller = AbortController()
    controller.abort()
    calls: list[str] = []
    unregister = controller.signal.on_abort(lambda: calls.append("late"))
    assert calls == ["late"]
    unregister()
    unregister()
    assert calls == ["late"]
    assert controller.signal._callbacks == {}


def test_callback_that_aborts_again_is_ignored() -> None:
    controller = AbortController()
    calls: list[object] = []

    def reenter() -> None:
        calls.append(controller.signal.reason)
        controller.abort("from the callback")

    controller.signal.on_abort(reenter)
    controller.signal.on_abort(lambda: calls.append("second"))
    controller.abort("outer")
    assert calls == ["outer", "second"]
    assert controller.signal.reason == "outer"


def test_callback_registered_during_abort_runs_at_once() -> None:
    controller = AbortController()
    calls: list[str] = []

    def register_another() -> None:
        calls.append("first")
        controller.signal.on_abort(lambda: calls.append("registered late"))

    controller.signal.on_abort(register_another)
    controller.abort()
    assert calls == ["first", "registered late"]


def test_raising_callback_is_logged_and_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    controller = AbortController()
    calls: list[str] = []

    def explode() -> None:
        calls.append("explode")
        raise RuntimeError("callback failed")

    controller.signal.on_abort(lambda: calls.append("before"))
    controller.signal.on_abort(explode)
    controller.signal.on_abort(lambda: calls.append("after"))
    with caplog.at_level(logging.ERROR, logger="pi_core"):
        controller.abort()  # must not raise
    assert calls == ["before", "explode", "after"]
    assert controller.signal.aborted
    [record] = caplog.records
    assert record.name == "pi_core"
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)


def test_raising_callback_registered_after_abort_does_not_raise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    controller = AbortController()
    controller.abort()

    def explode() -> None:
        raise RuntimeError("late callback failed")

    with caplog.at_level(logging.ERROR, logger="pi_core"):
        controller.signal.on_abort(explode)
    [record] = caplog.records
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)


# --- wait -------------------------------------------------------------------------------------


async def test_wait_returns_when_aborted_from_another_task() -> None:
    controller = AbortController()
    woken: list[int] = []

    async def waiter(number: int) -> None:
        await controller.signal.wait()
        woken.append(number)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for number in range(3):
                tg.start_soon(waiter, number)
            await anyio.wait_all_tasks_blocked()
            assert woken == []
            assert len(controller.signal._callbacks) == 3
            controller.abort()
            await anyio.wait_all_tasks_blocked()
            assert sorted(woken) == [0, 1, 2]
    assert controller.signal._callbacks == {}


async def test_wait_returns_at_once_if_already_aborted() -> None:
    controller = AbortController()
    controller.abort()
    with anyio.fail_after(5):
        await controller.signal.wait()
        await controller.signal.wait()
    assert controller.signal._callbacks == {}


async def test_cancelled_wait_unregisters_its_callback() -> None:
    controller = AbortController()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(controller.signal.wait)
            await anyio.wait_all_tasks_blocked()
            assert len(controller.signal._callbacks) == 1
            tg.cancel_scope.cancel()
    assert controller.signal._callbacks == {}
    assert not controller.signal.aborted


# --- scope ------------------------------------------------------------------------------------


async def test_scope_cancels_a_blocked_await_when_aborted_from_another_task() -> None:
    controller = AbortController()
    scopes: list[anyio.CancelScope] = []
    reached: list[str] = []
    done = anyio.Event()

    async def worker() -> None:
        with controller.signal.scope() as scope:
            scopes.append(scope)
            await anyio.sleep_forever()
            reached.append("after the await")
        reached.append("after the scope")
        done.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            assert not done.is_set()
            controller.abort("stop")
            # "At once": nothing but the abort is needed for the worker to finish.
            await anyio.wait_all_tasks_blocked()
            assert done.is_set()
    [scope] = scopes
    assert scope.cancel_called
    assert scope.cancelled_caught
    assert reached == ["after the scope"]
    assert controller.signal._callbacks == {}


async def test_scope_yields_a_cancel_scope() -> None:
    signal = AbortController().signal
    abort_scope = signal.scope()
    assert isinstance(abort_scope, AbortScope)
    with abort_scope as scope:
        assert isinstance(scope, anyio.CancelScope)
        assert not scope.cancel_called
        await anyio.lowlevel.checkpoint()
    assert not scope.cancelled_caught


async def test_scope_entered_after_abort_is_cancelled_at_once() -> None:
    controller = AbortController()
    controller.abort()
    reached: list[str] = []
    with anyio.fail_after(5):
        with controller.signal.scope() as scope:
            assert scope.cancel_called
            await anyio.lowlevel.checkpoint()
            reached.append("after the checkpoint")
        await anyio.lowlevel.checkpoint()  # outside the scope nothing is cancelled
    assert reached == []
    assert scope.cancelled_caught
    assert controller.signal._callbacks == {}


async def test_abort_inside_the_scope_cancels_at_the_next_checkpoint() -> None:
    controller = AbortController()
    reached: list[str] = []
    with anyio.fail_after(5):
        with controller.signal.scope() as scope:
            controller.abort()
            assert scope.cancel_called
            reached.append("before the checkpoint")
            await anyio.lowlevel.checkpoint()
            reached.append("after the checkpoint")
    assert reached == ["before the checkpoint"]
    assert scope.cancelled_caught


async def test_abort_after_the_scope_exited_cancels_nothing() -> None:
    controller = AbortController()
    with controller.signal.scope() as scope:
        await anyio.lowlevel.checkpoint()
    assert controller.signal._callbacks == {}
    controller.abort()
    assert not scope.cancel_called
    with anyio.fail_after(5):
        await anyio.lowlevel.checkpoint()


async def test_scope_does_not_swallow_outer_cancellation() -> None:
    signal = AbortController().signal
    reached: list[str] = []
    with anyio.fail_after(5):
        with anyio.CancelScope() as outer:
            with signal.scope() as inner:
                outer.cancel()
                await anyio.sleep_forever()
            reached.append("after the inner scope")
    assert outer.cancelled_caught
    assert not inner.cancel_called
    assert not inner.cancelled_caught
    assert reached == []
    assert not signal.aborted
    assert signal._callbacks == {}


async def test_scope_does_not_swallow_outer_cancellation_from_another_task() -> None:
    signal = AbortController().signal
    reached: list[str] = []
    scopes: list[anyio.CancelScope] = []

    async def worker() -> None:
        with signal.scope() as inner:
            scopes.append(inner)
            await anyio.sleep_forever()
        reached.append("after the inner scope")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
    [inner] = scopes
    assert not inner.cancelled_caught
    assert reached == []
    assert signal._callbacks == {}


async def test_scope_does_not_swallow_outer_cancellation_when_also_aborted() -> None:
    controller = AbortController()
    reached: list[str] = []
    with anyio.fail_after(5):
        with anyio.CancelScope() as outer:
            with controller.signal.scope():
                controller.abort()
                outer.cancel()
                await anyio.sleep_forever()
            reached.append("after the inner scope")
    assert outer.cancelled_caught
    assert reached == []


async def test_nested_scopes_of_one_signal() -> None:
    controller = AbortController()
    reached: list[str] = []
    with anyio.fail_after(5):
        with controller.signal.scope() as outer:
            with controller.signal.scope() as inner:
                assert len(controller.signal._callbacks) == 2
                controller.abort()
                await anyio.sleep_forever()
            reached.append("between the scopes")
        reached.append("after both scopes")
    assert inner.cancel_called
    assert outer.cancel_called
    assert outer.cancelled_caught
    assert reached == ["after both scopes"]
    assert controller.signal._callbacks == {}


async def test_nested_scopes_of_two_signals_are_independent() -> None:
    outer_controller = AbortController()
    inner_controller = AbortController()
    reached: list[str] = []
    scopes: dict[str, anyio.CancelScope] = {}

    async def worker() -> None:
        with outer_controller.signal.scope() as outer:
            scopes["outer"] = outer
            with inner_controller.signal.scope() as inner:
                scopes["inner"] = inner
                await anyio.sleep_forever()
            reached.append("after the inner scope")
            await anyio.sleep_forever()
        reached.append("after the outer scope")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            inner_controller.abort()
            await anyio.wait_all_tasks_blocked()
            assert reached == ["after the inner scope"]
            assert scopes["inner"].cancelled_caught
            assert not scopes["outer"].cancel_called
            assert inner_controller.signal._callbacks == {}
            assert len(outer_controller.signal._callbacks) == 1
            outer_controller.abort()
    assert reached == ["after the inner scope", "after the outer scope"]
    assert scopes["outer"].cancelled_caught
    assert outer_controller.signal._callbacks == {}


async def test_many_sequential_scopes_leave_no_callbacks() -> None:
    controller = AbortController()
    signal = controller.signal
    with anyio.fail_after(10):
        for _ in range(1000):
            with signal.scope():
                await anyio.lowlevel.checkpoint()
        assert signal._callbacks == {}
        for _ in range(100):
            with pytest.raises(KeyError), signal.scope():
                raise KeyError("leaves by an exception")
        assert signal._callbacks == {}
        for _ in range(100):
            with anyio.CancelScope() as outer, signal.scope():
                outer.cancel()
                await anyio.lowlevel.checkpoint()
        assert signal._callbacks == {}
        # The signal still works after all that.
        with signal.scope() as scope:
            controller.abort()
            await anyio.lowlevel.checkpoint()
    assert scope.cancelled_caught
    assert signal._callbacks == {}


async def test_many_nested_scopes_leave_no_callbacks() -> None:
    signal = AbortController().signal
    with ExitStack() as stack:
        for _ in range(200):
            stack.enter_context(signal.scope())
        assert len(signal._callbacks) == 200
        await anyio.lowlevel.checkpoint()
    assert signal._callbacks == {}


async def test_scopes_in_many_tasks_are_unregistered_when_the_tasks_are_cancelled() -> None:
    controller = AbortController()
    signal = controller.signal

    async def worker() -> None:
        with signal.scope():
            await anyio.sleep_forever()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(100):
                tg.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            assert len(signal._callbacks) == 100
            tg.cancel_scope.cancel()
    assert signal._callbacks == {}
    controller.abort()  # nothing left to cancel, and nothing breaks


async def test_abort_cancels_scopes_in_many_tasks() -> None:
    controller = AbortController()
    cancelled: list[int] = []

    async def worker(number: int) -> None:
        with controller.signal.scope() as scope:
            await anyio.sleep_forever()
        if scope.cancelled_caught:
            cancelled.append(number)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for number in range(50):
                tg.start_soon(worker, number)
            await anyio.wait_all_tasks_blocked()
            controller.abort()
    assert sorted(cancelled) == list(range(50))
    assert controller.signal._callbacks == {}


async def test_abort_from_another_thread() -> None:
    controller = AbortController()
    loop_thread = threading.get_ident()
    callback_threads: list[int] = []
    worker_threads: list[int] = []
    controller.signal.on_abort(lambda: callback_threads.append(threading.get_ident()))
    scopes: list[anyio.CancelScope] = []
    done = anyio.Event()

    async def worker() -> None:
        with controller.signal.scope() as scope:
            scopes.append(scope)
            await anyio.sleep_forever()
        done.set()

    def in_thread() -> None:
        worker_threads.append(threading.get_ident())
        anyio.from_thread.run_sync(controller.abort, "from a thread")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            await anyio.wait_all_tasks_blocked()
            await anyio.to_thread.run_sync(in_thread)
            await done.wait()
    assert worker_threads != [loop_thread]
    assert callback_threads == [loop_thread]
    assert controller.signal.reason == "from a thread"
    [scope] = scopes
    assert scope.cancelled_caught
    assert controller.signal._callbacks == {}
