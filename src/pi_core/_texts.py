"""Texts that reach transcripts and error messages, and the small helpers that shape them.

The aborted texts are upstream's, word for word: models and callers see them in transcripts.
"""

from __future__ import annotations

__all__ = [
    "CONNECTION_ERROR",
    "NO_TERMINAL_EVENT",
    "OPERATION_ABORTED",
    "REQUEST_ABORTED",
    "REQUEST_TIMED_OUT",
    "clip",
    "exception_text",
]

REQUEST_ABORTED = "Request was aborted"
"""The error of an assistant message whose model call was aborted."""

OPERATION_ABORTED = "Operation aborted"
"""The error result of a tool call cut short (or never started) by an abort."""

CONNECTION_ERROR = "Connection error."
"""The error of a request that failed in the HTTP stack (the official SDKs' words): the stack's
own texts can quote a request header, and so a credential."""

REQUEST_TIMED_OUT = "Request timed out."
"""The error of a request whose HTTP client timed out (connect, read, write or pool)."""

NO_TERMINAL_EVENT = "Stream ended without a terminal event"
"""The error of a reply whose stream ended with neither ``done`` nor ``error``."""


def tool_timed_out_text(name: str, timeout: float) -> str:
    """The error result of a tool call that its ``timeout`` cut short."""
    return f"Tool {name} timed out after {timeout:g} s"


def exception_text(exc: BaseException) -> str:
    """An exception's message, or its type's name when the message is empty."""
    return str(exc) or type(exc).__name__


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
