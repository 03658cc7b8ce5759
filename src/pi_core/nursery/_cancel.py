"""Telling a cancellation meant for the running task from one that merely passed through it.

On asyncio, code that awaits a task somebody else cancelled (a library's reader task, dropped on
connection loss) gets that task's ``CancelledError``, although nothing cancelled the code's own
task. Left alone, such a stray cancellation looks to anyio like the task being cancelled, and the
work around it ends without a trace. The code that runs user callables (tools, hooks, stream
functions) asks :func:`is_stray_cancellation` and treats a stray one as an ordinary failure.
"""

from __future__ import annotations

import math
import sys

import anyio

__all__ = ["is_stray_cancellation"]

_NATIVE_CANCEL_IS_VISIBLE = sys.version_info >= (3, 11)
"""Whether asyncio tasks say when they are being cancelled (``Task.cancelling()``, 3.11+)."""


def is_stray_cancellation(exc: BaseException, *, native_cancel_possible: bool = False) -> bool:
    """Whether ``exc`` is a cancellation exception that nothing delivered to the current task.

    A real cancellation is one of an enclosing cancel scope (an abort, a timeout, the host's
    scope: anyio then reports the task's effective deadline as minus infinity, on both backends)
    or, on asyncio, ``Task.cancel()`` called on the current task. Only asyncio can produce stray
    ones; trio raises ``Cancelled`` only for a cancelled scope.

    Args:
        exc: the exception caught around a user callable.
        native_cancel_possible: the current task is the caller's own, which the host may cancel
            with ``Task.cancel()`` rather than a cancel scope. Python 3.10 keeps no trace of such
            a cancel, so there every cancellation of such a task counts as real. Child tasks of
            pi_core's task groups are only ever cancelled through scopes.
    """
    if not isinstance(exc, anyio.get_cancelled_exc_class()):
        return False
    if anyio.current_effective_deadline() == -math.inf:
        return False
    return not _task_is_cancelling(native_cancel_possible)


def _task_is_cancelling(native_cancel_possible: bool) -> bool:
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:  # pragma: no cover - anyio always imports asyncio
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop: trio, whose Cancelled is never stray
        return True
    if task is None:  # pragma: no cover - anyio code always runs in a task
        return True
    if _NATIVE_CANCEL_IS_VISIBLE:
        return bool(task.cancelling())
    return native_cancel_possible  # pragma: no cover - Python 3.10 only
