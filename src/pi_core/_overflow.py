"""Recognising a reply that failed because its request did not fit the model's context window.

Each provider words it its own way, in the error text its HTTP error body gives:

* Anthropic Messages: ``prompt is too long: 213462 tokens > 200000 maximum`` (HTTP 400), and
  ``request_too_large`` / ``Request exceeds the maximum size`` (HTTP 413) for a body over its
  size limit (any HTTP 413 counts);
* OpenAI Chat Completions: ``This model's maximum context length is 128000 tokens. However, your
  messages resulted in …`` with the code ``context_length_exceeded``;
* OpenAI Responses: ``Your input exceeds the context window of this model.``;
* Google Generative AI: ``The input token count (1196265) exceeds the maximum number of tokens
  allowed (1048575).``

OpenAI-compatible servers mostly reuse OpenAI's wording. A rate limit that mentions tokens is no
overflow: compacting would not help it.
"""

from __future__ import annotations

import re

from ._messages import AgentMessage, AssistantMessage

__all__ = ["is_context_overflow"]

_OVERFLOW = re.compile(
    "|".join(
        (
            r"prompt is too long",
            r"request_too_large",
            r"request exceeds the maximum size",
            r"^413\b",
            r"maximum context length",
            r"context_length_exceeded",
            r"exceeds the context window",
            r"input token count.{0,40}exceeds the maximum",
        )
    ),
    re.IGNORECASE | re.DOTALL | re.MULTILINE,
)
_NOT_OVERFLOW = re.compile(r"rate.?limit|too many requests|\b429\b", re.IGNORECASE)


def is_context_overflow(message: AgentMessage) -> bool:
    """Whether ``message`` is a failed reply whose error says the context was too long."""
    if not isinstance(message, AssistantMessage) or message.stop_reason != "error":
        return False
    text = message.error_message or ""
    return bool(_OVERFLOW.search(text)) and not _NOT_OVERFLOW.search(text)
