"""The engine seams: what an execution engine, a tracer or a test harness builds on.

An engine that runs the loop in its own way (durably, step by step, in a workflow) needs more of
the loop than an application does, and must not reach into its internals to get it. These are
the pieces it may use, kept as stable as the rest of the public API:

* :class:`ReplyReader` reads one reply of a stream function exactly as a run does, for a model
  call made outside a run (an engine's model step).
* :class:`ToolCallAborted`, raised by a tool's ``execute``, ends its call as one an abort cut;
  :class:`RecordedCall`, returned by it, is a call's recorded value with the duration it had
  when it ran, and :class:`RecordedFailure`, raised by it, a recorded failure with its duration.
* :func:`run_tool_call` runs one tool call as a batch runs each of its calls (lookup,
  validation, hooks, execution), emitting no events, and returns a :class:`ToolCallOutcome`.
* :func:`now_ms` is the default clock. An engine that replays a run gives
  ``AgentLoopConfig(clock=...)`` a clock whose readings it records.
* :class:`RunTracer` and :class:`RunTrace` are the tracing seam (``AgentLoopConfig.tracer``).
* The texts the loop writes, for code that must write or recognise the same ones:
  :data:`OPERATION_ABORTED`, :data:`REQUEST_ABORTED`, :func:`tool_timed_out_text`,
  :func:`tool_call_denied_text`,
  :data:`COMPACTION_SUMMARY` (how a compaction's summary is put to the model),
  :data:`OVERFLOW_AFTER_COMPACTION` (a run whose context overflowed again after compacting),
  :func:`exception_text`, :func:`clip`, which shortens a text for display, and
  :func:`install_hint`, the pip command that adds an extra, and :func:`installed_version`.
* The compaction of a run, for an engine that makes it a step of its own: :func:`compaction_due`
  says whether a policy's threshold is passed, :func:`summarise_for_run` asks for the summary as
  a run does, and :func:`apply_compaction` gives the compacted transcript and logs the
  compaction as an Agent's does.
* :func:`terminal_event` is the ``done`` / ``error`` event that ends a reply with a given final
  message, by its stop reason.
* :func:`call_hook` calls a user's hook as the loop does (sync or async, its result awaited
  when awaitable): for an engine that wraps one of the hooks it was given.
* :func:`turn_outcome` is the outcome a run has after a ``turn_end``: the rule every reader of a
  run's events shares (the Agent's state, a front end); :func:`add_usage` adds a reply's usage
  to a running total, as ``RunResult.usage`` is added up; :func:`limits_left` is what a run's
  limits leave after the replies counted so far, for an engine that runs one run as several.
* :class:`ReportedToolError`, raised by a tool whose call failed as the tool's own outcome (a
  remote tool's error result): the call ends as an error result logged at DEBUG in one line.
* :func:`http_failure_text` describes a failed HTTP request by its URL and cause, never in the
  HTTP stack's own words (which may quote headers); :func:`redact_credentials` takes the keys,
  tokens and passwords out of a text before a front end shows it.
* The system-message helpers, for providers and session stores: :func:`provider_transcript`
  is what a provider sends for a context (one system prompt, the tools, the other messages);
  :func:`current_system_message` is the replayed state as one message,
  :func:`collapse_system_messages` puts it in front of the rest, :func:`system_message_text`
  renders one message's prompt and :func:`render_system_update` a later one's changes;
  :func:`initial_system_message` makes a leading one and :func:`declaration` strips a tool to
  what a system message declares.
* :data:`OUTPUT_TOOL` is the name of the tool a typed answer is given with, and
  :func:`given_output` finds the result of a run's valid output call among its messages: its
  ``details`` are the typed answer as JSON (what an engine that stores a run's messages returns
  as its output).
* :data:`BUILT_IN_PROVIDERS` is the table of the providers that ship with pi_core, and
  :func:`built_in_stream` imports one's stream function on first use.

The rest of the seams are fields of :class:`~pi_core.AgentLoopConfig`: ``clock``,
``interruptions`` (the engine's exceptions a run lets pass unchanged), ``before_tool_batch``
(where a batch's calls are announced in source order) and ``tracer``.
"""

from __future__ import annotations

from ._compacting import (
    OVERFLOW_AFTER_COMPACTION,
    apply_compaction,
    compaction_due,
    summarise_for_run,
)
from ._compaction import COMPACTION_SUMMARY
from ._events import terminal_event
from ._http import http_failure_text
from ._limits import limits_left
from ._log import ReportedToolError
from ._loop import ReplyReader
from ._maybe_async import call_hook
from ._messages import now_ms
from ._output import OUTPUT_TOOL, given_output
from ._public import publish_module_names
from ._redact import redact_credentials
from ._registry import BUILT_IN_PROVIDERS, BuiltInProvider, built_in_stream
from ._result import add_usage, turn_outcome
from ._system import (
    ProviderTranscript,
    collapse_system_messages,
    current_system_message,
    declaration,
    initial_system_message,
    provider_transcript,
    render_system_update,
    system_message_text,
)
from ._texts import (
    OPERATION_ABORTED,
    REQUEST_ABORTED,
    clip,
    exception_text,
    install_hint,
    installed_version,
    tool_call_denied_text,
    tool_timed_out_text,
)
from ._tool_call import (
    RecordedCall,
    RecordedFailure,
    ToolCallAborted,
    ToolCallOutcome,
    run_tool_call,
)
from ._tracer import RunTrace, RunTracer

__all__ = [  # noqa: RUF022 - in plain sorted order, which the public-API test checks
    "BUILT_IN_PROVIDERS",
    "BuiltInProvider",
    "COMPACTION_SUMMARY",
    "OPERATION_ABORTED",
    "OUTPUT_TOOL",
    "OVERFLOW_AFTER_COMPACTION",
    "ProviderTranscript",
    "REQUEST_ABORTED",
    "RecordedCall",
    "RecordedFailure",
    "ReplyReader",
    "ReportedToolError",
    "RunTrace",
    "RunTracer",
    "ToolCallAborted",
    "ToolCallOutcome",
    "add_usage",
    "apply_compaction",
    "built_in_stream",
    "call_hook",
    "clip",
    "collapse_system_messages",
    "compaction_due",
    "current_system_message",
    "declaration",
    "exception_text",
    "given_output",
    "http_failure_text",
    "initial_system_message",
    "install_hint",
    "installed_version",
    "limits_left",
    "now_ms",
    "provider_transcript",
    "redact_credentials",
    "render_system_update",
    "run_tool_call",
    "summarise_for_run",
    "system_message_text",
    "terminal_event",
    "tool_call_denied_text",
    "tool_timed_out_text",
    "turn_outcome",
]

publish_module_names(globals(), __all__, __name__)
