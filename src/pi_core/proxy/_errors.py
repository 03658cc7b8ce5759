"""What a proxy client may read of a failure: never a header value, never a credential.

The proxy server holds API keys its clients must not see. An exception of the HTTP stack can
quote a request header (h11 refuses ``Illegal header value b'Bearer sk-…\\n'`` for a key read
with its newline), and an error text can carry a key in a URL or an assignment. Such texts are
replaced or redacted before they go on the wire.
"""

from __future__ import annotations

import re

from .._texts import CONNECTION_ERROR, exception_text

__all__ = ["CONNECTION_ERROR", "public_error_text", "redact_credentials"]

_HTTP_STACK = frozenset({"httpx", "httpcore", "h11", "h2", "ssl", "socket"})
"""Packages whose exception texts may quote headers or connection details."""

_REDACTED = "[redacted]"
_CREDENTIALS = (
    # A bytes literal: how h11 and httpcore quote the header value they refuse.
    (re.compile(r"""b(['"])(?:\\.|(?!\1).)*\1"""), f"b'{_REDACTED}'"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[^\s'\",;]+"), rf"\1 {_REDACTED}"),
    # key=…, api-key: …, "token": "…", x-api-key=… (in URLs, headers, JSON, assignments)
    (
        re.compile(
            r"""(?i)((?:[\w-]*)(?:key|token|secret|password|signature|auth)["']?\s*[:=]\s*["']?)"""
            r"""[^\s'"&,;}]+"""
        ),
        rf"\1{_REDACTED}",
    ),
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}"), _REDACTED),
)


def public_error_text(exc: BaseException) -> str:
    """The text a proxy client gets for ``exc``: its message, redacted, or a generic one for
    an exception of the HTTP stack."""
    if type(exc).__module__.partition(".")[0] in _HTTP_STACK:
        return CONNECTION_ERROR
    return redact_credentials(exception_text(exc))


def redact_credentials(text: str) -> str:
    """``text`` with what looks like a credential replaced by ``[redacted]``."""
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text
