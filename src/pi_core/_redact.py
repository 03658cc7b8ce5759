"""Keeping secrets out of reprs and error texts: credential headers, tokens, keys in text.

A repr ends up in logs, tracebacks and bug reports; an error text may be sent to a proxy's
clients. Neither may show an API key or a bearer token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "REDACTED",
    "headers_repr",
    "is_secret_header",
    "redact_credentials",
    "redacted_headers",
    "secret_repr",
]

REDACTED = "[redacted]"

_SECRET_HEADER = re.compile(r"auth|key|token|secret|passw|cookie|signature|credential", re.I)
"""Header names whose values carry credentials: Authorization, x-api-key, api-key, Cookie …"""

_CREDENTIALS = (
    # A bytes literal: how h11 and httpcore quote the header value they refuse.
    (re.compile(r"""b(['"])(?:\\.|(?!\1).)*\1"""), f"b'{REDACTED}'"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[^\s'\",;]+"), rf"\1 {REDACTED}"),
    # key=…, api-key: …, "token": "…", x-api-key=… (in URLs, headers, JSON, assignments)
    (
        re.compile(
            r"""(?i)([\w-]*(?:key|token|secret|password|signature|auth)["']?\s*[:=]\s*["']?)"""
            r"""[^\s'"&,;}]+"""
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}"), REDACTED),
)


def is_secret_header(name: str) -> bool:
    """Whether a header of this name carries a credential (by its name, case-insensitively)."""
    return _SECRET_HEADER.search(name) is not None


def redacted_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """A copy of ``headers`` with the values of credential headers replaced."""
    if headers is None:
        return None
    return {name: REDACTED if is_secret_header(name) else value for name, value in headers.items()}


def headers_repr(headers: Mapping[str, str] | None) -> str:
    """The repr of ``headers`` without credentials (for ``attrs.field(repr=...)``)."""
    return repr(redacted_headers(headers))


def secret_repr(value: object) -> str:
    """The repr of a secret: whether there is one, never what it is."""
    return repr(None) if value is None else repr(REDACTED)


def redact_credentials(text: str) -> str:
    """``text`` with what looks like a credential replaced by ``[redacted]``."""
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text
