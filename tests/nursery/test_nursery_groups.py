"""unwrap_single_exception: one failure escapes as itself, several as one ConcurrentTaskError."""

from __future__ import annotations

import asyncio
import sys
import traceback

import anyio
import pytest

from pi_core.nursery import ConcurrentTaskError, unwrap_single_exception

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup, ExceptionGroup


def _raise(error: BaseException) -> None:
    raise error


def _raise_while_handling(error: BaseException) -> None:
    empty: dict[str, int] = {}
    try:
        empty["missing"]
    except KeyError:
        raise error  # noqa: B904 - the implicit context is the point


def _failing_leaf(message: str) -> ValueError:
    """A ValueError that has been raised, so it carries a traceback through ``_raise``."""
    try:
        _raise(ValueError(message))
    except ValueError as error:
        return error
    raise AssertionError("unreachable")


def test_no_exception() -> None:
    ran: list[str] = []
    with unwrap_single_exception():
        ran.append("body")
    assert ran == ["body"]


def test_a_plain_exception_passes_through_untouched() -> None:
    error = ValueError("plain")
    with pytest.raises(ValueError, match="plain") as excinfo, unwrap_single_exception():
        _raise_while_handling(error)
    assert excinfo.value is error
    assert isinstance(error.__context__, KeyError)
    assert not error.__suppress_context__


def test_a_single_exception_is_unwrapped() -> None:
    error = ValueError("single")
    with pytest.raises(ValueError, match="single") as excinfo, unwrap_single_exception():
        raise ExceptionGroup("group", [error])
    assert excinfo.value is error


def test_a_nested_single_exception_is_unwrapped() -> None:
    error = ValueError("deep")
    group = ExceptionGroup("outer", [ExceptionGroup("middle", [ExceptionGroup("inner", [error])])])
    with pytest.raises(ValueError, match="deep") as excinfo, unwrap_single_exception():
        raise group
    assert excinfo.value is error


def test_a_single_base_exception_is_unwrapped() -> None:
    error = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt) as excinfo, unwrap_single_exception():
        raise BaseExceptionGroup("group", [BaseExceptionGroup("inner", [error])])
    assert excinfo.value is error


def test_several_errors_become_one_error_raised_from_the_group() -> None:
    errors = [ValueError("a"), TypeError("b")]
    group = ExceptionGroup("group", errors)
    with pytest.raises(ConcurrentTaskError) as excinfo, unwrap_single_exception():
        raise group
    assert excinfo.value.__cause__ is group
    assert excinfo.value.group is group
    assert str(excinfo.value) == "2 concurrent tasks failed: ValueError('a'), TypeError('b')"


def test_several_errors_deeper_down_are_counted_at_every_depth() -> None:
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [ValueError("a")]), TypeError("b")])
    with (
        pytest.raises(ConcurrentTaskError, match="2 concurrent") as excinfo,
        unwrap_single_exception(),
    ):
        raise group
    assert excinfo.value.group is group


def test_cancellations_beside_one_error_do_not_count() -> None:
    error = ValueError("the one")
    group = BaseExceptionGroup(
        "group", [asyncio.CancelledError(), BaseExceptionGroup("inner", [error])]
    )
    with pytest.raises(ValueError, match="the one") as excinfo, unwrap_single_exception():
        raise group
    assert excinfo.value is error


def test_only_cancellations_raise_the_first() -> None:
    first, second = asyncio.CancelledError("first"), asyncio.CancelledError("second")
    with pytest.raises(asyncio.CancelledError) as excinfo, unwrap_single_exception():
        raise BaseExceptionGroup("group", [first, second])
    assert excinfo.value is first


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_beside_an_error_wins_raised_from_the_group(
    kind: type[BaseException],
) -> None:
    group = BaseExceptionGroup("group", [ValueError("a"), kind("stop")])
    with pytest.raises(kind) as excinfo, unwrap_single_exception():
        raise group
    assert excinfo.value.args == ("stop",)
    assert excinfo.value.__cause__ is group


def test_the_traceback_of_the_unwrapped_exception_is_kept() -> None:
    error = _failing_leaf("with a traceback")
    with pytest.raises(ValueError, match="with a traceback") as excinfo, unwrap_single_exception():
        raise ExceptionGroup("group", [error])
    assert excinfo.value is error
    names = [frame.name for frame in traceback.extract_tb(excinfo.value.__traceback__)]
    assert "_raise" in names


def test_the_cause_is_kept() -> None:
    cause = OSError("the cause")
    error = ValueError("effect")
    error.__cause__ = cause
    with pytest.raises(ValueError, match="effect") as excinfo, unwrap_single_exception():
        raise ExceptionGroup("group", [error])
    assert excinfo.value.__cause__ is cause
    assert excinfo.value.__suppress_context__


def test_the_implicit_context_is_kept() -> None:
    error = ValueError("raised while handling a KeyError")
    try:
        _raise_while_handling(error)
    except ValueError:
        pass
    assert isinstance(error.__context__, KeyError)
    with pytest.raises(ValueError, match="while handling") as excinfo, unwrap_single_exception():
        raise ExceptionGroup("group", [error])
    assert excinfo.value is error
    # Neither replaced by the group (which holds the error: a cycle) nor hidden.
    assert isinstance(error.__context__, KeyError)
    assert not error.__suppress_context__
    assert "KeyError" in "".join(traceback.format_exception(error))


def test_no_context_stays_no_context() -> None:
    error = ValueError("fresh")
    with pytest.raises(ValueError, match="fresh"), unwrap_single_exception():
        raise ExceptionGroup("group", [error])
    assert error.__context__ is None
    assert error.__cause__ is None


@pytest.mark.anyio
async def test_a_task_group_with_one_failing_child() -> None:
    error = ValueError("child failed")

    async def fail() -> None:
        _raise_while_handling(error)

    with (
        anyio.fail_after(5),
        pytest.raises(ValueError, match="child failed") as excinfo,
        unwrap_single_exception(),
    ):
        async with anyio.create_task_group() as tg:
            tg.start_soon(fail)
            await anyio.sleep_forever()
    assert excinfo.value is error
    assert isinstance(error.__context__, KeyError)


@pytest.mark.anyio
async def test_a_task_group_with_two_failing_children() -> None:
    errors = [ValueError("first"), TypeError("second")]
    both = anyio.Event()
    arrived: list[int] = []

    async def fail(error: Exception) -> None:
        arrived.append(1)
        if len(arrived) == 2:
            both.set()
        with anyio.CancelScope(shield=True):
            await both.wait()
        raise error

    with (
        anyio.fail_after(5),
        pytest.raises(ConcurrentTaskError) as excinfo,
        unwrap_single_exception(),
    ):
        async with anyio.create_task_group() as tg:
            for error in errors:
                tg.start_soon(fail, error)
    leaves = excinfo.value.group.exceptions
    assert sorted(map(id, leaves)) == sorted(map(id, errors))
    assert excinfo.value.__cause__ is excinfo.value.group


@pytest.mark.anyio
async def test_a_failing_child_with_cancelled_siblings_escapes_as_itself() -> None:
    error = ValueError("the failure")
    started = anyio.Event()

    async def sleeper() -> None:
        started.set()
        await anyio.sleep_forever()

    async def fail() -> None:
        await started.wait()
        raise error

    with (
        anyio.fail_after(5),
        pytest.raises(ValueError, match="the failure") as excinfo,
        unwrap_single_exception(),
    ):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sleeper)
            tg.start_soon(sleeper)
            tg.start_soon(fail)
    assert excinfo.value is error


@pytest.mark.anyio
async def test_an_outer_cancellation_of_several_children_reaches_its_scope() -> None:
    sleeping = 0
    all_asleep = anyio.Event()

    async def sleeper() -> None:
        nonlocal sleeping
        sleeping += 1
        if sleeping == 3:
            all_asleep.set()
        await anyio.sleep_forever()

    with anyio.fail_after(5), anyio.CancelScope() as scope, unwrap_single_exception():
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(sleeper)
            await all_asleep.wait()
            scope.cancel()
    assert scope.cancelled_caught
