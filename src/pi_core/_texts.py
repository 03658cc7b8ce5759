"""Upstream's texts for aborted work, word for word: models and callers see them in transcripts."""

from __future__ import annotations

__all__ = ["OPERATION_ABORTED", "REQUEST_ABORTED"]

REQUEST_ABORTED = "Request was aborted"
"""The error of an assistant message whose model call was aborted."""

OPERATION_ABORTED = "Operation aborted"
"""The error result of a tool call cut short (or never started) by an abort."""
