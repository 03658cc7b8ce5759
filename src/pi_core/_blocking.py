"""Debug runs warn when a tool holds the event loop: a blocking call stops every other task.

A tool that calls ``time.sleep``, a synchronous HTTP client or a long computation inside its
``async def`` never yields: the other calls of its batch, the listeners and an abort all wait
for it, and nothing says why. With ``PI_CORE_DEBUG=1`` every tool's ``execute`` is driven one
step at a time (a step runs from one suspension to the next), and a step that takes longer than
:data:`SLOW_STEP_SECONDS` is logged as a warning, as asyncio's debug mode logs a slow callback
on its backend. Without it tools are not wrapped, and this costs nothing.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Generator
from typing import Any, Final

import attrs

from ._log import logger
from ._tools import AgentTool

__all__ = ["SLOW_STEP_SECONDS", "watched_tool"]

SLOW_STEP_SECONDS: Final = 0.1
"""How long a tool may run without yielding to the event loop before a debug run warns."""


def watched_tool(tool: AgentTool) -> AgentTool:
    """``tool`` with an ``execute`` that warns about every step holding the loop too long (a
    tool that is no attrs class, which a copy cannot be made of, is left as it is)."""
    if not attrs.has(type(tool)):
        return tool
    execute = tool.execute
    name = tool.name

    def watched_execute(tool_call_id: str, *args: Any) -> Awaitable[Any]:
        return _WatchedSteps(execute(tool_call_id, *args), name, tool_call_id)

    return attrs.evolve(tool, execute=watched_execute)


class _WatchedSteps:
    """Awaits an awaitable step by step, passing everything through, and times each step."""

    __slots__ = ("_awaitable", "_call_id", "_name")

    def __init__(self, awaitable: Awaitable[Any], name: str, call_id: str) -> None:
        self._awaitable = awaitable
        self._name = name
        self._call_id = call_id

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self._awaitable.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            started = time.perf_counter()
            try:
                yielded = steps.send(value) if error is None else steps.throw(error)
            except StopIteration as stop:
                self._check(started)
                return stop.value
            except BaseException:
                self._check(started)
                raise
            self._check(started)
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # a cancellation, delivered to the tool where it waits
                value, error = None, exc

    def _check(self, started: float) -> None:
        held = time.perf_counter() - started
        if held > SLOW_STEP_SECONDS:
            logger.warning(
                "Tool %s (call %s) held the event loop for %.3f s without yielding: every "
                "other task waited. A blocking call (time.sleep, a synchronous client, long "
                "computation) belongs in a worker thread (anyio.to_thread.run_sync) or should "
                "be replaced by its async form.",
                self._name,
                self._call_id,
                held,
            )
