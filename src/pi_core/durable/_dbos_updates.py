"""The updates a step writes while it runs: ``message_update`` and ``tool_execution_update``.

They are written from inside the step, unrecorded (a step that runs again after a crash writes
them again). The step never waits for the database: it posts each update, and one writer task
writes whatever has accumulated, so a burst of deltas becomes one stream entry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from dbos import DBOS

from .. import AgentEvent
from ._dbos_logs import durable_logger, engine_error_text
from ._dbos_names import EVENTS
from ._record import encode_event, step_end

__all__ = ["UpdateWriter", "open_update_writer"]


class UpdateWriter:
    """Collects a step's updates (encoded at once: a partial message changes later)."""

    __slots__ = ("_closed", "_pending", "_wake")

    def __init__(self) -> None:
        self._pending: list[list[Any]] = []
        self._wake = anyio.Event()
        self._closed = False

    def post(self, event: AgentEvent) -> None:
        """Queue ``event`` for writing; never blocks. After the step ended it is dropped.

        It is stamped with the wall clock: updates are not recorded, so neither is their time.
        """
        if not self._closed:
            self._pending.append(encode_event(event, step_end()))
            self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def write_all(self) -> None:
        """Write batches until closed and drained.

        Updates are best effort: when the database fails to take one, the step's later updates
        are dropped, and the step (whose outcome is recorded, or not, on its own) goes on.
        """
        while True:
            if self._pending:
                batch, self._pending = self._pending, []
                try:
                    await DBOS.write_stream_async(EVENTS, batch)
                except Exception as exc:  # the engine's stops are BaseExceptions: they pass
                    self._closed = True
                    self._pending = []
                    durable_logger.warning(
                        "a step's updates could not be written, the rest are dropped: %s",
                        engine_error_text(exc),
                    )
            elif self._closed:
                return
            else:
                # A fresh event, made after the checks with no await in between: a post or
                # the close that comes while this task waits sets it.
                self._wake = anyio.Event()
                await self._wake.wait()


@asynccontextmanager
async def open_update_writer() -> AsyncIterator[UpdateWriter]:
    """A writer for the block's updates; leaving the block writes what is left."""
    writer = UpdateWriter()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(writer.write_all)
        try:
            yield writer
        finally:
            writer.close()
