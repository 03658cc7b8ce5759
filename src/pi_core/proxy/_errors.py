"""What a proxy client may read of a failure: never a header value, never a credential.

The proxy server holds API keys its clients must not see. An exception of the HTTP stack can
quote a request header (h11 refuses ``Illegal header value b'Bearer sk-…\\n'`` for a key read
with its newline), and an error text can carry a key in a URL or an assignment. Such texts are
replaced or redacted before they go on the wire, off the event loop when they are long, so that
one client's request cannot hold up the others.
"""

from __future__ import annotations

import attrs

from .. import StreamError
from .._http import http_failure_text, is_http_stack_error
from .._redact import redact_credentials_off_loop
from .._texts import exception_text

__all__ = ["public_error_text", "redact_event"]


async def public_error_text(exc: BaseException) -> str:
    """The text a proxy client gets for ``exc``: its message, redacted, or for an exception of
    the HTTP stack a text made without the stack's own."""
    if is_http_stack_error(exc):
        return http_failure_text(exc)
    return await redact_credentials_off_loop(exception_text(exc))


async def redact_event(event: StreamError) -> StreamError:
    """A copy of ``event`` whose error text is redacted."""
    if event.error.error_message is None:
        return event
    text = await redact_credentials_off_loop(event.error.error_message)
    return StreamError(event.reason, attrs.evolve(event.error, error_message=text))
