"""Naming the public module as the home of re-exported objects."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, Mapping


def publish_module_names(
    namespace: Mapping[str, object], names: Iterable[str], module: str
) -> None:
    """Set ``__module__`` of each exported class or function defined in a private module.

    Reprs, tracebacks and the API docs then show the path users import from. A class's string
    annotations are evaluated first, where they were written: ``typing.get_type_hints`` (and so
    cattrs and autodoc) would otherwise look for their names in the public module.
    """
    for name in names:
        obj = namespace[name]
        home = getattr(obj, "__module__", None)
        if not isinstance(home, str) or "._" not in home:
            continue
        if isinstance(obj, type):
            _evaluate_own_annotations(obj)
        elif not hasattr(obj, "__code__"):
            continue
        obj.__module__ = module


def _evaluate_own_annotations(cls: type) -> None:
    own = inspect.get_annotations(cls)
    if not own:
        return
    hints = typing.get_type_hints(cls, include_extras=True)
    cls.__annotations__ = {field: hints[field] for field in own}
