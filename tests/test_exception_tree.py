"""The exception tree drawn in ``pi_core._exceptions``'s docstring is the real one: every
exception class the public packages export is drawn, under its real base, with its builtin bases
after a comma; nothing else is drawn."""

from __future__ import annotations

import importlib
import re

import pytest

from pi_core import _exceptions

PACKAGES = [
    "pi_core",
    "pi_core.models",
    "pi_core.nursery",
    "pi_core.proxy",
    "pi_core.serialization",
    "pi_core.testing",
    "pi_core.mcp",
    "pi_core.durable",
    "pi_core.sessions",
    "pi_core.lowlevel",
]

_LINE = re.compile(r"^    (?P<indent>(?:[│ ]   )*)(?:[├└]── )?(?P<names>\w+(?:, \w+)*)(?:\s{2,}|$)")


MISSING: list[str] = []
"""Packages that cannot be imported here (an extra that is not installed)."""


def exported_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            MISSING.append(package)
            continue
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found[name] = value
    return found


def drawn_tree() -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Each drawn class: its drawn parent (``None`` for a root) and its builtin bases."""
    doc = _exceptions.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n:class:", 1)[0]
    drawn: dict[str, tuple[str | None, tuple[str, ...]]] = {}
    parents: list[str] = []
    for line in block.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 4 + (1 if "──" in line else 0)
        name, *builtins = match["names"].split(", ")
        del parents[depth:]
        drawn[name] = (parents[-1] if parents else None, tuple(builtins))
        parents.append(name)
    return drawn


def test_every_exported_exception_is_drawn_and_nothing_else() -> None:
    drawn, exported = drawn_tree(), exported_exceptions()
    assert set(exported) <= set(drawn)
    if MISSING:
        pytest.skip(f"not installed here: {', '.join(MISSING)}")
    assert sorted(drawn) == sorted(exported)


@pytest.mark.parametrize("name", sorted(drawn_tree()))
def test_each_drawn_class_has_the_drawn_bases(name: str) -> None:
    parent, builtins = drawn_tree()[name]
    exported = exported_exceptions()
    if name not in exported:
        pytest.skip(f"{name} is in an extra that is not installed")
    bases = tuple(base.__name__ for base in exported[name].__bases__)
    assert bases == ((parent or "Exception"), *builtins)


def test_the_rule_holds_for_the_types_that_used_to_stand_outside() -> None:
    from pi_core import PiCoreError
    from pi_core.mcp import MCPToolError
    from pi_core.testing import EventGrammarError, ScriptedToolError, TranscriptError

    for cls in (EventGrammarError, TranscriptError, ScriptedToolError, MCPToolError):
        assert issubclass(cls, PiCoreError)
    assert issubclass(EventGrammarError, AssertionError)  # a test runner's failed assertion
    assert issubclass(TranscriptError, AssertionError)
