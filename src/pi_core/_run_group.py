"""The run's task group, watched in debug runs: nothing else may run in it while the model streams.

An abort cuts the model call by cancelling the run's task group (see ``_loop``). That is correct
only because the group has no other task while the model streams: tool calls are spawned into it
by a batch, after the reply, and the batch waits for all of them. This module checks that
invariant when ``PI_CORE_DEBUG`` is set in the environment (the test suite sets it). Otherwise
the group is not wrapped and the check costs one attribute test per model call.
"""

from __future__ import annotations

import os
from collections.abc import Coroutine
from contextvars import Context
from types import TracebackType
from typing import Any, Final, Literal, TypeVar

from anyio import TaskHandle
from anyio.abc import TaskGroup

__all__ = ["DEBUG", "WatchedTaskGroup"]

DEBUG: Final = os.environ.get("PI_CORE_DEBUG", "") not in ("", "0")
"""Whether runs check their invariants (``PI_CORE_DEBUG=1``); read once, at import."""

T = TypeVar("T")


class WatchedTaskGroup(TaskGroup):
    """A run's task group that remembers what was spawned into it, so the loop can check that the
    model streams alone."""

    def __init__(self, inner: TaskGroup) -> None:
        self._inner = inner
        self.cancel_scope = inner.cancel_scope
        self._handles: list[TaskHandle[Any]] = []
        self._spawned = 0
        self._started_services = 0
        self._quiet_from: int | None = None

    def create_task(
        self, coro: Coroutine[Any, Any, T], *, name: object = None, context: Context | None = None
    ) -> TaskHandle[T]:
        self._spawned += 1
        handle = self._inner.create_task(coro, name=name, context=context)
        self._handles.append(handle)
        return handle

    async def start(
        self, func: Any, *args: object, name: object = None, return_handle: bool = False
    ) -> Any:
        self._spawned += 1
        self._started_services += 1  # a task that signals readiness: long-lived by design
        if return_handle:
            return await self._inner.start(func, *args, name=name, return_handle=True)
        return await self._inner.start(func, *args, name=name)

    async def __aenter__(self) -> TaskGroup:
        raise RuntimeError("a watched task group wraps a group that is already open")

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> Literal[False]:
        return False

    def model_call_starts(self) -> None:
        """Check that no task of the group is alive as the model call begins.

        Raises:
            AssertionError: one is.
        """
        self._handles = [handle for handle in self._handles if _alive(handle)]
        if self._handles or self._started_services:
            names = [handle.name for handle in self._handles]
            raise AssertionError(
                "the run's task group must have no other task while the model streams "
                f"(an abort cancels the whole group), but it has {names or 'started services'}"
            )
        self._quiet_from = self._spawned

    def model_call_ended(self) -> None:
        """Check that nothing was spawned into the group while the model streamed.

        Raises:
            AssertionError: something was.
        """
        spawned = self._spawned - (self._quiet_from or 0)
        self._quiet_from = None
        if spawned:
            raise AssertionError(
                f"{spawned} task(s) spawned into the run's task group while the model streamed: "
                "an abort of the model call would have cancelled them"
            )


def _alive(handle: TaskHandle[Any]) -> bool:
    return handle.status in (TaskHandle.Status.PENDING, TaskHandle.Status.CANCELLING)
