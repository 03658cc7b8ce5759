"""What a browser may read of a failure: the text with its credentials taken out."""

from __future__ import annotations

from ..lowlevel import clip, redact_credentials

__all__ = ["MAX_ERROR_CHARS", "public_text"]

MAX_ERROR_CHARS = 4000
"""An error text longer than this is shortened: a page shows a line or two of it."""


def public_text(text: str) -> str:
    """``text`` shortened and without anything that looks like a key, token or password.

    Shortened first, so that the redaction reads a bounded text in the event loop's thread.
    """
    return redact_credentials(clip(text, MAX_ERROR_CHARS))
