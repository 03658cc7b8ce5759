"""Ctrl-C as an event of the event loop, so that it can abort a run instead of killing it."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator, Iterator

import anyio

__all__ = [
    "EXIT_ABORTED",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "open_interrupts",
    "wait_for_stop_signal",
]

EXIT_OK = 0
EXIT_ERROR = 1
"""A model or tool error ended the run."""
EXIT_USAGE = 2
EXIT_ABORTED = 130
"""128 + SIGINT, as shells report a process ended by Ctrl-C."""


@contextlib.contextmanager
def open_interrupts(*also: signal.Signals) -> Iterator[AsyncIterator[signal.Signals] | None]:
    """Receive SIGINT (and the signals ``also``) as an async iterator, or ``None`` where the
    backend cannot.

    While the receiver is open, Ctrl-C no longer raises :class:`KeyboardInterrupt`. Where it is
    not available (asyncio on Windows) Ctrl-C keeps its default behaviour, which the CLI's
    ``main`` turns into exit status 130 without a close-out.
    """
    with contextlib.ExitStack() as stack:
        try:
            receiver = stack.enter_context(anyio.open_signal_receiver(signal.SIGINT, *also))
        except NotImplementedError:
            receiver = None
        yield receiver


async def wait_for_stop_signal() -> None:
    """Return at the first SIGINT or SIGTERM: a server's cue for a graceful shutdown."""
    with open_interrupts(signal.SIGTERM) as signals:
        if signals is None:  # no signal receiver here: Ctrl-C raises KeyboardInterrupt instead
            await anyio.sleep_forever()
        else:
            await signals.__anext__()
