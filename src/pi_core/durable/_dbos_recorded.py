"""How a durable run awaits the engine: what stops a workflow, and a step it could not record."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Final, TypeVar

from dbos._error import DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError

from ._dbos_logs import engine_error_text
from ._spec import DurableError

__all__ = ["INTERRUPTIONS", "NotRecordedError", "recorded"]

T = TypeVar("T")


class NotRecordedError(DurableError):
    """The engine could not run or record a step (its database failed): the run stops here.

    Never a call's result: the step's outcome is unknown to the record, so a recovered run
    runs the step again.
    """


INTERRUPTIONS: Final = (DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError, NotRecordedError)
"""What stops a workflow (DBOS's exceptions, a step the engine could not record): the run lets
them pass, unconverted."""


async def recorded(operation: Awaitable[T], what: str) -> T:
    """Await an operation of the engine; its failure stops the run, never becoming data.

    The operation's own outcomes (a tool's error, an aborted call) are values by then: what is
    raised here is the engine failing to run or record it (a full disk, a lost database).
    """
    try:
        return await operation
    except Exception as exc:
        if isinstance(exc, INTERRUPTIONS):
            raise
        raise NotRecordedError(f"{what} could not be recorded: {engine_error_text(exc)}") from exc
