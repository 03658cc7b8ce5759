"""Tools for testing agents built on pi_core.

The hypothesis strategies need hypothesis (the ``testing`` extra); they load on first use, so the
rest works without it.

* :func:`check_event_grammar` / :func:`check_transcript`: is this a well-formed run?
* :class:`ScriptedStream` / :func:`scripted_reply`: a model that streams given replies and can
  stop at a chosen event.
* :class:`ToolScript`: tools whose calls update, fail, time out and complete when the test
  releases them, not when the clock says.
* :class:`RunScript` / :class:`ScriptedRun`: a whole run as data, and the harness that plays it.
* :func:`scripted_runs`, :func:`abort_points`, :func:`injections`: hypothesis strategies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._public import publish_module_names
from ..lowlevel import install_hint
from ._grammar import EventGrammarError, check_event_grammar
from ._script import (
    CONTROL_OUTCOMES,
    CallOutcome,
    CallScript,
    RunRecord,
    RunScript,
    ScriptedRun,
    TurnScript,
)
from ._stream import ScriptedStream, scripted_reply
from ._tools import CallBehaviour, ReleaseBatch, ScriptedToolError, ToolOutcome, ToolScript
from ._transcript import TranscriptError, check_transcript

if TYPE_CHECKING:
    from ._strategies import Injection, abort_points, call_scripts, injections, scripted_runs

_STRATEGIES = ("Injection", "abort_points", "call_scripts", "injections", "scripted_runs")
"""What ``_strategies`` defines: the only names that need hypothesis."""

__all__ = (
    "CONTROL_OUTCOMES",
    "CallBehaviour",
    "CallOutcome",
    "CallScript",
    "EventGrammarError",
    "Injection",
    "ReleaseBatch",
    "RunRecord",
    "RunScript",
    "ScriptedRun",
    "ScriptedStream",
    "ScriptedToolError",
    "ToolOutcome",
    "ToolScript",
    "TranscriptError",
    "TurnScript",
    "abort_points",
    "call_scripts",
    "check_event_grammar",
    "check_transcript",
    "injections",
    "scripted_reply",
    "scripted_runs",
)

publish_module_names(globals(), [name for name in __all__ if name not in _STRATEGIES], __name__)


def __getattr__(name: str) -> Any:
    """Load the hypothesis strategies the first time one is asked for."""
    if name not in _STRATEGIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from . import _strategies
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        raise ImportError(
            f"pi_core.testing.{name} needs hypothesis: {install_hint('testing')}"
        ) from exc
    publish_module_names(vars(_strategies), _STRATEGIES, __name__)
    globals().update({strategy: getattr(_strategies, strategy) for strategy in _STRATEGIES})
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_STRATEGIES})
