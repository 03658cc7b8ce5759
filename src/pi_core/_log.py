"""The ``pi_core`` logger: failures that do not stop the program still leave a trace.

pi_core configures no handler and no level: the application decides. Without any logging
configuration Python's last-resort handler prints WARNING and above to stderr, so a tool that
raises or a failed model call is seen even then. Nothing is logged on the paths of a run that
succeeds, so logging costs nothing until something fails.

* WARNING: a tool (or a hook around one) raised; the model gets the error result and the run
  goes on. The record carries the traceback. (Arguments that fail validation are not logged:
  that is the model's mistake, and the model is told.)
* DEBUG: a tool reported that its call failed (a :class:`ReportedToolError`, such as an MCP
  server's error result): the tool worked as meant, so one line with the start of the text.
* ERROR: a model call failed (the turn ends with ``stop_reason="error"``), or the Agent closed
  out a run that raised.
"""

from __future__ import annotations

import logging
from typing import Final

from ._exceptions import OutputError, ToolArgumentsError
from ._messages import AssistantMessage, Model, ToolCall
from ._texts import clip

__all__ = [
    "TOOL",
    "ReportedToolError",
    "log_model_failure",
    "log_run_failure",
    "log_tool_failure",
    "logger",
]

logger = logging.getLogger("pi_core")


TOOL: Final = ""
"""``log_tool_failure``'s ``hook`` when the tool itself raised."""


_PREVIEW_CHARS: Final = 200
"""How much of a reported error's text its DEBUG line quotes: the model gets the whole text."""


class ReportedToolError(Exception):
    """Raised by a tool whose call failed as the tool's own outcome (a remote tool's error
    result), not by a fault of the program: logged at DEBUG in one line, without a traceback."""


def log_tool_failure(call: ToolCall, hook: str, exc: BaseException) -> None:
    """A tool call's tool (``hook`` is :data:`TOOL`) or ``hook`` raised ``exc``; the model gets
    the error.

    Arguments that fail validation are the model's mistake, reported to the model: not logged.
    """
    if isinstance(exc, ToolArgumentsError):
        return
    if hook == TOOL and isinstance(exc, ReportedToolError):
        text = clip(str(exc), _PREVIEW_CHARS)
        logger.debug("Tool %s reported an error (call %s): %r", call.name, call.id, text)
        return
    name = type(exc).__name__
    after = "the model gets it as the call's error result"
    if hook == TOOL:
        logger.warning(
            "Tool %s raised %s (call %s); %s", call.name, name, call.id, after, exc_info=exc
        )
    else:
        logger.warning(
            "%s raised %s for tool %s (call %s); %s",
            hook,
            name,
            call.name,
            call.id,
            after,
            exc_info=exc,
        )


def log_model_failure(model: Model, message: AssistantMessage, exc: BaseException | None) -> None:
    """The model call for ``model`` ended in ``message`` with ``stop_reason="error"``."""
    logger.error(
        "Model call to %s/%s failed: %s",
        model.provider,
        model.id,
        message.error_message,
        exc_info=exc,
    )


def log_run_failure(exc: BaseException) -> None:
    """An Agent run raised ``exc`` (a hook or a listener); the Agent closes the run out.

    A typed answer's spent retries are the model's failure, not the program's: one line, no
    traceback.
    """
    if isinstance(exc, OutputError):
        logger.warning("Agent run failed: %s", exc)
        return
    logger.error(
        "Agent run failed with %s; it ends with an error message", type(exc).__name__, exc_info=exc
    )
