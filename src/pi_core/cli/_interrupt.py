"""Ctrl-C as an event of the event loop, so that it can abort a run instead of killing it."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import anyio

from .. import AbortSignal, Agent

__all__ = [
    "EXIT_ABORTED",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "RunInterrupter",
    "open_interrupts",
    "stop_signals",
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


@contextlib.contextmanager
def stop_signals() -> Iterator[Callable[[], Awaitable[None]]]:
    """Receive SIGINT and SIGTERM from here on; yield the wait for the first one: a server's cue
    for a graceful shutdown.

    A signal that arrives before the wait begins (while the server binds, say) is kept for it,
    so a server that has announced its address never dies of a Ctrl-C sent at once.
    """
    with open_interrupts(signal.SIGTERM) as signals:

        async def stopped() -> None:
            if signals is None:  # no signal receiver here: Ctrl-C raises KeyboardInterrupt instead
                await anyio.sleep_forever()
            else:
                await signals.__anext__()

        yield stopped


class RunInterrupter:
    """What Ctrl-C does to the Agent's active run: the first press stops it (the run finishes
    its current step and ends before its next request), the second aborts it.

    Args:
        agent: the Agent whose runs are interrupted.
        note: shows the user what the press did.
        what: the run's name in those notes (``"run"``, ``"turn"``).
    """

    def __init__(self, agent: Agent, note: Callable[[str], None], what: str) -> None:
        self.agent = agent
        self.note = note
        self.what = what
        self._stopped: AbortSignal | None = None
        """The signal of the run the last press stopped: a press during that run aborts it."""

    def interrupt(self) -> bool:
        """Stop, else abort, the active run; False when there is none to interrupt (or it is
        aborting already): then the caller quits."""
        signal = self.agent.signal
        if signal is None or signal.aborted:
            return False
        if signal is not self._stopped:
            self._stopped = signal
            self.agent.stop()
            self.note(
                f"interrupted: stopping after this step (Ctrl-C again to abort the {self.what})"
            )
        else:
            self.agent.abort("interrupted")
            self.note(f"interrupted: aborting the {self.what} (Ctrl-C again to quit)")
        return True

    def stopping(self) -> bool:
        """Whether the active run was stopped by a press (and is not aborted)."""
        signal = self.agent.signal
        return signal is not None and signal is self._stopped and not signal.aborted
