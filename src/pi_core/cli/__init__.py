"""The ``pi-core`` command line (also ``python -m pi_core``).

* ``pi-core run PROMPT`` runs one prompt and renders the agent at work: streamed text and thinking,
  each tool call with its arguments, progress and result, and a closing summary.
* ``pi-core chat`` is an interactive session: lines typed while the agent works steer it.
* ``pi-core serve-proxy`` serves the proxy API with hypercorn.

Without a provider the commands use a built-in demo model that needs no network and no key.
"""

from __future__ import annotations

from ._app import build_parser, main

__all__ = ("build_parser", "main")
