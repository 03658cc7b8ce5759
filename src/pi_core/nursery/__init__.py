"""Structured-concurrency building blocks of pi_core, usable on their own.

This package imports nothing from the rest of pi_core.
"""

from __future__ import annotations

from ._abort import AbortController, AbortScope, AbortSignal
from ._fanout import Job, Post, fan_out
from ._groups import unwrap_single_exception
from ._stream import EventStream, open_event_stream

__all__ = (
    "AbortController",
    "AbortScope",
    "AbortSignal",
    "EventStream",
    "Job",
    "Post",
    "fan_out",
    "open_event_stream",
    "unwrap_single_exception",
)


for _name in __all__:
    _obj = globals()[_name]
    # Only what a private module here defines: the aliases (Job, Post) keep their own module, and
    # on Python 3.10 a generic alias even passes for a class but refuses a new ``__module__``.
    if getattr(_obj, "__module__", "").startswith(f"{__name__}._"):
        _obj.__module__ = __name__  # the public path, for reprs and docs
del _name, _obj
