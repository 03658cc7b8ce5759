"""``python -m pi_core``: the ``pi-core`` command line (see :mod:`pi_core.cli`)."""

from __future__ import annotations

from pi_core.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
