"""The exception tree: every error pi_core raises on purpose is a :class:`PiCoreError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._outcome import RunResult

__all__ = [
    "AgentBusyError",
    "PiCoreError",
    "ProviderError",
    "ProxyError",
    "RunError",
    "ToolArgumentsError",
]


class PiCoreError(Exception):
    """Base class of every error raised by pi_core itself."""


class AgentBusyError(PiCoreError, RuntimeError):
    """Raised by :meth:`Agent.prompt` and :meth:`Agent.continue_` while a run is active.

    The message is upstream's, word for word, so that it reads the same in both runtimes.
    """


class ToolArgumentsError(PiCoreError, ValueError):
    """Raised by :func:`validate_tool_arguments` when a tool call's arguments fail its schema.

    Inside the agent loop it never escapes: its text becomes the tool's error result.
    """


class ProviderError(PiCoreError):
    """Raised when a provider is misconfigured before any request is made (for example no API key).

    Failures of a request itself are reported as a ``StreamError`` event, never raised.
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
