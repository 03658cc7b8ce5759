"""Abort as a cancel scope: an :class:`AbortController` and the :class:`AbortSignal` it gives."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType

import anyio
import anyio.lowlevel

__all__ = ["AbortController", "AbortSignal"]

_log = logging.getLogger("pi_core")


class AbortSignal:
    """The reading side of an :class:`AbortController`.

    It tells whether an abort happened (:attr:`aborted`, :attr:`reason`), lets a task wait for it
    (:meth:`wait`), and turns it into cancellation (:meth:`scope`): everything awaited inside
    ``with signal.scope():`` is cancelled at once when the controller aborts.
    """

    __slots__ = ("_aborted", "_callbacks", "_next_key", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._callbacks: dict[int, Callable[[], object]] = {}
        self._next_key = 0

    @property
    def aborted(self) -> bool:
        """True once the controller has aborted; never goes back to False."""
        return self._aborted

    @property
    def reason(self) -> object:
        """The reason passed to :meth:`AbortController.abort` (``None`` if none was given)."""
        return self._reason

    def on_abort(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback()`` when the signal aborts (at once if it already has).

        Returns a function that unregisters the callback; calling it more than once is harmless.
        A callback that raises is logged and does not stop the others.
        """
        if self._aborted:
            _call_logged(callback)
            return _nothing
        key = self._next_key
        self._next_key = key + 1
        self._callbacks[key] = callback
        return _Unregister(self._callbacks, key)

    async def wait(self) -> None:
        """Wait until the signal aborts; returns at once (after a checkpoint) if it already has."""
        if self._aborted:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        unregister = self.on_abort(event.set)
        try:
            await event.wait()
        finally:
            unregister()

    def scope(self) -> AbortScope:
        """A context manager yielding a :class:`anyio.CancelScope` that the abort cancels.

        The scope is cancelled at once if the signal has already aborted. As with any cancel
        scope, cancellation is caught at its exit; check ``scope.cancelled_caught`` or
        :attr:`aborted` afterwards.
        """
        return AbortScope(self)

    def _abort(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        callbacks = list(self._callbacks.values())
        self._callbacks.clear()
        for callback in callbacks:
            _call_logged(callback)

    def __repr__(self) -> str:
        state = f"aborted, reason={self._reason!r}" if self._aborted else "not aborted"
        return f"<AbortSignal {state}>"


class _Unregister:
    """What :meth:`AbortSignal.on_abort` returns: one small object rather than a closure."""

    __slots__ = ("_callbacks", "_key")

    def __init__(self, callbacks: dict[int, Callable[[], object]], key: int) -> None:
        self._callbacks = callbacks
        self._key = key

    def __call__(self) -> None:
        self._callbacks.pop(self._key, None)


class AbortScope:
    """The context manager returned by :meth:`AbortSignal.scope`."""

    __slots__ = ("_cancel_scope", "_signal", "_unregister")

    def __init__(self, signal: AbortSignal) -> None:
        self._signal = signal
        self._cancel_scope = anyio.CancelScope()
        self._unregister: Callable[[], None] = _nothing

    def __enter__(self) -> anyio.CancelScope:
        cancel_scope = self._cancel_scope.__enter__()
        self._unregister = self._signal.on_abort(cancel_scope.cancel)
        return cancel_scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._unregister()
        return self._cancel_scope.__exit__(exc_type, exc, tb)


class AbortController:
    """Aborts a run: ``controller.abort()`` cancels every scope of ``controller.signal``.

    ``abort`` is synchronous, idempotent (only the first reason counts) and never raises. Call it
    from any task of the event loop that runs the work; from another thread, use
    ``anyio.from_thread.run_sync(controller.abort)``.
    """

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        """The signal this controller aborts."""
        return self._signal

    def abort(self, reason: object = None) -> None:
        """Abort the signal: set :attr:`AbortSignal.aborted` and cancel all of its scopes."""
        self._signal._abort(reason)

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"


def _nothing() -> None:
    return None


def _call_logged(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:
        _log.exception("an abort callback raised")
