"""Tools for testing agents built on pi_core (install the ``testing`` extra: it needs hypothesis).

* :func:`check_event_grammar` / :func:`check_transcript`: is this a well-formed run?
* :class:`ScriptedStream` / :func:`scripted_reply`: a model that streams given replies and can
  stop at a chosen event.
* :class:`ToolScript`: tools whose calls update, fail, time out and complete when the test
  releases them, not when the clock says.
* :class:`RunScript` / :class:`ScriptedRun`: a whole run as data, and the harness that plays it.
* :func:`scripted_runs`, :func:`abort_points`, :func:`injections`: hypothesis strategies.
"""

from __future__ import annotations

from .._public import publish_module_names
from ._grammar import EventGrammarError, check_event_grammar
from ._script import (
    CallOutcome,
    CallScript,
    RunRecord,
    RunScript,
    ScriptedRun,
    TurnScript,
)
from ._strategies import Injection, abort_points, call_scripts, injections, scripted_runs
from ._stream import ScriptedStream, scripted_reply
from ._tools import CallBehaviour, ReleaseBatch, ScriptedToolError, ToolOutcome, ToolScript
from ._transcript import TranscriptError, check_transcript

__all__ = (
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

publish_module_names(globals(), __all__, __name__)
