"""Structured-concurrency building blocks of pi_core, usable on their own.

This package imports nothing from the rest of pi_core.
"""

from __future__ import annotations

from ._abort import AbortController, AbortScope, AbortSignal
from ._fanout import Job, Post, fan_out
from ._groups import ConcurrentTaskError, unwrap_single_exception
from ._public import publish_module_names
from ._stream import EventStream, open_event_stream

__all__ = (
    "AbortController",
    "AbortScope",
    "AbortSignal",
    "ConcurrentTaskError",
    "EventStream",
    "Job",
    "Post",
    "fan_out",
    "open_event_stream",
    "unwrap_single_exception",
)


publish_module_names(globals(), __all__, __name__)
