"""Texts that reach transcripts and error messages, and the small helpers that shape them.

The aborted texts are upstream's, word for word: models and callers see them in transcripts.
"""

from __future__ import annotations

import json
import shlex
from importlib import metadata
from urllib.parse import unquote, urlparse

__all__ = [
    "NO_STOP_REASON",
    "NO_TERMINAL_EVENT",
    "OPERATION_ABORTED",
    "REQUEST_ABORTED",
    "REQUEST_TIMED_OUT",
    "clip",
    "connection_error_text",
    "deadline_exceeded_text",
    "exception_text",
    "install_hint",
    "tool_call_denied_text",
    "truncated_tool_call_text",
]

REQUEST_ABORTED = "Request was aborted"
"""The error of an assistant message whose model call was aborted."""

OPERATION_ABORTED = "Operation aborted"
"""The error result of a tool call cut short (or never started) by an abort."""


REQUEST_TIMED_OUT = "Request timed out."
"""The error of a request whose HTTP client timed out (connect, read, write or pool)."""

NO_TERMINAL_EVENT = "Stream ended without a terminal event"
NO_STOP_REASON = "The response ended without a stop reason"
"""The error of a final message whose stop reason is still ``"pending"``."""
"""The error of a reply whose stream ended with neither ``done`` nor ``error``."""


def tool_timed_out_text(name: str, timeout: float) -> str:
    """The error result of a tool call that its ``timeout`` cut short."""
    return f"Tool {name} timed out after {timeout:g} s"


def truncated_tool_call_text(name: str) -> str:
    """The error result of a tool call in a reply that stopped at the output token limit."""
    return (
        f'Tool call "{name}" was not executed: the response hit the output token limit, so its '
        "arguments may be truncated. Re-issue the tool call with complete arguments."
    )


def tool_call_denied_text(reason: str | None) -> str:
    """The error result of a tool call whose approval was denied."""
    return f"Tool call denied: {reason}" if reason else "Tool call denied"


def deadline_exceeded_text(deadline: float) -> str:
    """The abort reason of a run whose deadline expired."""
    return f"Run deadline of {deadline:g} s exceeded"


def connection_error_text(cause: str, url: str | None) -> str:
    """The error of a request that failed in the HTTP stack: the official SDKs' ``Connection
    error``, with what went wrong and where (the stack's own texts are never used: they can quote
    a request header, and so a credential)."""
    return f"Connection error ({url}): {cause}" if url else f"Connection error: {cause}"


def too_many_tool_calls_text(count: int, limit: int) -> str:
    """The error result of a call past the limit of calls one reply may make."""
    return (
        f"Tool call not run: the reply made {count} tool calls, and only the first {limit} run "
        f"(max_tool_calls_per_reply). Make fewer calls per reply."
    )


def exception_text(exc: BaseException) -> str:
    """An exception's message, or its type's name when the message is empty."""
    return str(exc) or type(exc).__name__


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


DISTRIBUTION = "pi-agent-core-py"
"""The name pi_core is installed under (``pi-core`` is an unrelated distribution)."""


def installed_version() -> str:
    """The installed pi_core's version, or ``"unknown"`` in a source tree never installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def install_hint(extra: str) -> str:
    """The pip command that adds ``extra`` to this installation of pi_core.

    pi_core is installed from a checkout, which pip records (PEP 610's ``direct_url.json``): the
    command names that checkout, so it works as printed from any folder. Without that record it
    names the checkout's root folder, ``.``.
    """
    checkout, editable = _installed_from()
    target = shlex.quote(f"{checkout or '.'}[{extra}]")
    return f"pip install {'-e ' if editable else ''}{target}"


def _installed_from() -> tuple[str | None, bool]:
    """The local folder pi_core was installed from, and whether it was an editable install."""
    try:
        record = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None, False
    try:
        origin = json.loads(record or "null")
        url = urlparse(origin["url"])
        editable = bool(origin.get("dir_info", {}).get("editable", False))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, False
    if url.scheme != "file" or "dir_info" not in origin:
        return None, False
    return unquote(url.path), editable
