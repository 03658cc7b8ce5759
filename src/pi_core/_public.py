"""Naming the public module as the home of re-exported objects (defined in the nursery, which
imports nothing of the rest of pi_core, so that it can use it too)."""

from __future__ import annotations

from .nursery._public import publish_module_names

__all__ = ["publish_module_names"]
