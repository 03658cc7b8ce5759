"""The event-loop backends the suite runs on: asyncio, and trio when it is installed.

``PI_CORE_TEST_BACKENDS=asyncio`` (or ``trio``, or ``asyncio,trio``) narrows the list, so a
session that repeats the suite on another Python or other dependency versions can take one
backend while the main session takes both. Naming a backend that is not installed is an error,
not a silent skip.
"""

from __future__ import annotations

import importlib.util
import os

_INSTALLED = ["asyncio"] + (["trio"] if importlib.util.find_spec("trio") is not None else [])


def _chosen() -> list[str]:
    wanted = os.environ.get("PI_CORE_TEST_BACKENDS", "").strip()
    if not wanted:
        return _INSTALLED
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    missing = [name for name in names if name not in _INSTALLED]
    if missing or not names:
        raise RuntimeError(
            f"PI_CORE_TEST_BACKENDS={wanted!r}: installed backends are {', '.join(_INSTALLED)}"
        )
    return names


BACKENDS: list[str] = _chosen()
"""Every async test, and every test that starts a process on a backend, runs once per entry."""
