"""The exceptions pi_core raises, and the rule for which kind a failure is.

The rule is httpx's. A :class:`PiCoreError` reports a condition that a correct program can meet
at run time and may want to handle: an agent that is busy, a model's tool arguments that fail
the tool's schema, a provider that cannot serve a request, a proxy peer that breaks the
protocol, data that does not describe what it should, a run that failed (:class:`RunError`,
when asked for). Where a builtin fits, the error also subclasses it (:class:`AgentBusyError` is
a ``RuntimeError``, :class:`ToolArgumentsError` and :class:`SerializationError` are
``ValueError``\\ s), so ``except ValueError`` keeps working.

The tree (a builtin after a comma is a base class too; a class is exported by ``pi_core``, or
by the ``pi_core`` package named in brackets)::

    PiCoreError
    ├── AgentBusyError, RuntimeError                  a prompt while a run is active
    ├── ToolArgumentsError, ValueError                a tool call's arguments fail its schema
    ├── ProviderError                                 a provider cannot serve a request
    ├── ProxyError                                    a proxy peer broke the protocol
    ├── RunError                                      raise_for_error(): a run failed or was aborted
    │   └── OutputError                               a typed answer's retries were spent
    ├── SerializationError, ValueError                data not of the class asked for
    ├── SubagentError                                 a sub-agent's run failed (an error result)
    ├── CompactionError                               nothing to compact, or the summary failed
    ├── SessionFileError, ValueError        [sessions] no session file this version reads
    ├── ModelNotFoundError, LookupError     [models]  no such provider or model
    ├── ToolServerError                     [mcp]     a server cannot start or list tools
    ├── MCPToolError                        [mcp]     a call failed (an error result)
    ├── DurableError                        [durable] the engine or its database failed
    │   ├── UnknownAgentError, LookupError  [durable] no agent of that name
    │   ├── UnknownRunError, LookupError    [durable] no run of that id
    │   └── RunFailedError                  [durable] result() of a run that failed
    ├── EventGrammarError, AssertionError   [testing] events that are not one run
    ├── TranscriptError, AssertionError     [testing] a transcript no provider takes
    └── ScriptedToolError                   [testing] a call scripted to fail

    ConcurrentTaskError                     [nursery] several concurrent tasks failed at once

    ToolCallAborted                        [lowlevel] an engine's tool: its call was aborted
    RecordedFailure                        [lowlevel] an engine's tool: a failure it recorded
    ReportedToolError                      [lowlevel] a tool's own error result, logged briefly

:class:`~pi_core.nursery.ConcurrentTaskError` stands outside on purpose: it carries the failures
of several tasks, of any kind, mistakes of the calling program among them, so it must not be
caught as a condition to handle (and ``pi_core.nursery`` depends on nothing of pi_core). The
three of ``pi_core.lowlevel`` stand outside too: they are no conditions for a program to handle
but signals a tool raises to the loop, which turns each into the call's result.

A mistake in the calling program is a builtin, as in the standard library, and is not meant to be
caught but fixed: ``TypeError`` for an argument of the wrong type (or a tool that returns one),
``ValueError`` for a bad value or setting (``Agent(max_parallel_tools=0)``, an unknown queue
mode, continuing a run from nothing), ``RuntimeError`` for a call made at a moment it cannot be
honoured (the result of a run that did not complete).

Inside a run, a failing model call is the reply's ``StreamError`` and a failing tool its error
result; any other failure propagates out of the loop functions as itself, and the Agent turns it
into ``state.error_message`` (see "Failures" in the concepts page, which also states this rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._result import RunResult

__all__ = [
    "AgentBusyError",
    "OutputError",
    "PiCoreError",
    "ProviderError",
    "ProxyError",
    "RunError",
    "SerializationError",
    "ToolArgumentsError",
]


class PiCoreError(Exception):
    """Base class of the errors a correct program can meet at run time and may handle.

    A mistake in the calling program is a plain ``TypeError``, ``ValueError`` or ``RuntimeError``
    instead (see "Which exceptions" in the concepts page).
    """


class AgentBusyError(PiCoreError, RuntimeError):
    """Raised by :meth:`Agent.prompt` and :meth:`Agent.continue_` while a run is active.

    The message is upstream's, word for word, so that it reads the same in both runtimes.
    """


class ToolArgumentsError(PiCoreError, ValueError):
    """Raised by :func:`validate_tool_arguments` when a tool call's arguments fail its schema.

    Inside the agent loop it never escapes: its text becomes the tool's error result.
    """


class ProviderError(PiCoreError):
    """A provider cannot serve a request: no API key, an error status, a stream that is malformed,
    reports an error or ends early.

    A built-in provider raises it when called without an API key, before any request. A failed
    request it reports as its stream's terminal ``StreamError``, whose ``error_message`` is the
    text of the ``ProviderError`` it met. In a run both become the same failed reply, as does
    any exception a stream function of your own raises.
    """


class ProxyError(PiCoreError):
    """Raised by the proxy client or server for a protocol violation that is not a stream event."""


class RunError(PiCoreError):
    """Raised by :meth:`RunResult.raise_for_error` for a run that failed or was aborted.

    Its text is the run's ``error_message``; its ``result`` attribute is the whole outcome.
    """

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result
        """The outcome of the run: its messages, its reply, its error."""

    def __reduce__(self) -> tuple[type[RunError], tuple[str, RunResult]]:
        # Pickled with its result, so that an engine that stores a failed run's exception (a
        # durable workflow's) can load it again.
        return type(self), (str(self), self.result)


class OutputError(RunError):
    """A run with an output type ended without a valid answer: its retries were spent.

    Its text is ``Output failed after <n> retries: <the last error>``. The loop functions raise
    it (its ``result`` holds the run's messages); an Agent run records it as the run's failure,
    and :meth:`RunResult.raise_for_error` raises it.
    """


class SerializationError(PiCoreError, ValueError):
    """Raised by :func:`~pi_core.serialization.from_dict` and
    :func:`~pi_core.serialization.loads` for data that does not describe the class asked for;
    the text lists each problem with its path."""
