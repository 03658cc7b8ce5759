"""Naming the public module as the home of re-exported objects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def publish_module_names(
    namespace: Mapping[str, object], names: Iterable[str], module: str
) -> None:
    """Set ``__module__`` of each exported class or function defined in a private module.

    Reprs, tracebacks and the API docs then show the path users import from.
    """
    for name in names:
        obj = namespace[name]
        home = getattr(obj, "__module__", None)
        if (
            isinstance(home, str)
            and "._" in home
            and (isinstance(obj, type) or hasattr(obj, "__code__"))
        ):
            obj.__module__ = module
