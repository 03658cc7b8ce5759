"""The loop's tracing seam: where a run lets a tracer see it, and make its spans current.

The loop knows nothing of any tracing library. A :class:`RunTracer` set on the config is asked
for a :class:`RunTrace` when a run starts; the run then tells it every event and enters its
context managers around the work they describe, in the task that does the work — so a span
the tracer makes current there is current for everything the work does (the spans of an HTTP
client inside the stream function, of a database call inside a tool). With no tracer, a run
pays one attribute check per run, model call and tool call.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import TracebackType
from typing import Protocol

from ._events import AgentEvent
from ._messages import Context, Model, ToolCall
from .nursery import AbortSignal

__all__ = ["RunTrace", "RunTracer"]


class RunTrace(Protocol):
    """The trace of one run, entered as a context manager around the whole run."""

    def __enter__(self) -> object: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        """Leave the run; ``exc`` is what the run raised, if anything (cancellation included)."""

    def on_event(self, event: AgentEvent) -> None:
        """See an event of the run, just before it is emitted; must not raise."""

    def model_call(self, model: Model, context: Context) -> AbstractContextManager[object]:
        """Entered around one model call: the stream function and the iteration of its events.

        Its ``message_end`` follows the block (also when an abort cut the call short).
        """

    def tool_call(self, tool_call: ToolCall) -> AbstractContextManager[object]:
        """Entered around one tool's ``execute`` (and ``after_tool_call``), in the task that
        runs it, between that call's ``tool_execution_start`` and ``tool_execution_end``."""


class RunTracer(Protocol):
    """Traces runs: set as :attr:`AgentLoopConfig.tracer` (or ``Agent.tracer``)."""

    def trace_run(self, model: Model, signal: AbortSignal) -> RunTrace:
        """The trace of a run that is about to start with ``model``, aborted through ``signal``."""
