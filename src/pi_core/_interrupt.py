"""Interruptions: exceptions of an execution engine that a run lets pass, never turning them into data.

A run turns most failures into data: a raising tool becomes an error result, a raising stream
function an error reply, a failing Agent run a failure message. An engine that runs the loop
durably (a workflow engine) stops a run by raising its own exception at its next recorded step;
converting that exception would hide the stop from the engine. Registering its type makes every
such place re-raise it unchanged, as a cancellation would be.
"""

from __future__ import annotations

__all__ = ["is_interruption", "register_interruption", "unregister_interruption"]

_interruptions: tuple[type[BaseException], ...] = ()


def register_interruption(exception_type: type[BaseException]) -> None:
    """Let ``exception_type`` (and its subclasses) pass through every run unchanged.

    Registering a type twice registers it once.
    """
    global _interruptions
    if exception_type not in _interruptions:
        _interruptions = (*_interruptions, exception_type)


def unregister_interruption(exception_type: type[BaseException]) -> None:
    """Undo :func:`register_interruption`; an unknown type is ignored."""
    global _interruptions
    _interruptions = tuple(known for known in _interruptions if known is not exception_type)


def is_interruption(exc: BaseException) -> bool:
    """Whether ``exc`` is an instance of a registered interruption type.

    Only failure paths ask, so an empty registry costs nothing while a run goes well.
    """
    return bool(_interruptions) and isinstance(exc, _interruptions)
