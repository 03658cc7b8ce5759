"""What a proxy client may read of a failure: never a header value, never a credential.

The proxy server holds API keys its clients must not see. An exception of the HTTP stack can
quote a request header (h11 refuses ``Illegal header value b'Bearer sk-…\\n'`` for a key read
with its newline), and an error text can carry a key in a URL or an assignment. Such texts are
replaced or redacted before they go on the wire.
"""

from __future__ import annotations

from .._redact import redact_credentials
from .._texts import CONNECTION_ERROR, exception_text

__all__ = ["public_error_text"]

_HTTP_STACK = frozenset({"httpx", "httpcore", "h11", "h2", "ssl", "socket"})
"""Packages whose exception texts may quote headers or connection details."""


def public_error_text(exc: BaseException) -> str:
    """The text a proxy client gets for ``exc``: its message, redacted, or a generic one for
    an exception of the HTTP stack."""
    if type(exc).__module__.partition(".")[0] in _HTTP_STACK:
        return CONNECTION_ERROR
    return redact_credentials(exception_text(exc))
