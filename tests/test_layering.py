"""The layering rule of pi_core, read from the source with ``ast``: every package only looks down.

The nursery imports nothing of pi_core; the core imports only the nursery; the models catalogue,
the providers, then proxy / durable / mcp / tracing / testing, then the CLI each import only what
is below them. Imports inside functions and under ``TYPE_CHECKING`` count too. A new subpackage
must be given its layer here (see docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

CORE = "pi_core (core)"
LAYERS: dict[str, int] = {
    "pi_core.nursery": 0,
    CORE: 1,
    "pi_core.models": 2,
    "pi_core.providers": 3,
    "pi_core.proxy": 4,
    "pi_core.durable": 4,
    "pi_core.mcp": 4,
    "pi_core.tracing": 4,
    "pi_core.testing": 4,
    "pi_core.cli": 5,
}
"""Each area and its layer: an area may import its own modules and those of lower layers."""

OWNED_BY = {"pi_core._models_data": "pi_core.models", "pi_core.__main__": "pi_core.cli"}
"""Top-level modules that belong to an area other than the core."""


def area_of(module: str) -> str:
    """The area of a ``pi_core`` module (a KeyError for a subpackage without a layer)."""
    if module in OWNED_BY:
        return OWNED_BY[module]
    parts = module.split(".")
    if len(parts) == 1:
        return CORE
    top = f"pi_core.{parts[1]}"
    if top in LAYERS:
        return top
    if (SRC / "pi_core" / parts[1]).is_dir():
        raise KeyError(f"{top} has no layer in tests/test_layering.py")
    return CORE  # a module of the core: pi_core._loop, pi_core.serialization …


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``pi_core`` import in ``source``, relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # ``from . import x`` may name a submodule: count it as the submodule.
            names = [f"{target}.{alias.name}" for alias in node.names] if not node.module else []
            found.extend((node.lineno, name) for name in names or [target])
    return [(line, name) for line, name in found if name.split(".")[0] == "pi_core"]


def violations(path: Path, source: str) -> list[str]:
    """What ``source`` (the text of ``path``) imports against the layering rule."""
    module = module_name(path)
    own = area_of(module)
    problems = []
    for line, target in imported_modules(source, module, path.name == "__init__.py"):
        other = area_of(_existing(target))
        if other != own and LAYERS[other] >= LAYERS[own]:
            problems.append(f"{path.relative_to(SRC)}:{line}: {own} imports {target} ({other})")
    return problems


def _existing(target: str) -> str:
    """``target``, or its longest prefix that is a module (``from pkg import name`` names)."""
    parts = target.split(".")
    while len(parts) > 1:
        base = SRC.joinpath(*parts)
        if base.is_dir() or base.with_suffix(".py").exists():
            break
        parts.pop()
    return ".".join(parts)


SOURCES = sorted((SRC / "pi_core").rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(SRC)))
def test_every_module_only_looks_down(path: Path) -> None:
    assert violations(path, path.read_text(encoding="utf-8")) == []


def test_every_area_of_the_port_has_a_layer() -> None:
    # The packages being added sit where the rule expects them, present yet or not.
    assert area_of("pi_core.providers.openai_responses") == "pi_core.providers"
    assert area_of("pi_core.providers.google") == "pi_core.providers"
    for package in ("durable", "mcp", "tracing"):
        assert area_of(f"pi_core.{package}._anything") == f"pi_core.{package}"
    assert area_of("pi_core.models") == "pi_core.models"
    assert area_of("pi_core._loop") == CORE
    assert area_of("pi_core") == CORE


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        (
            "pi_core/nursery/_abort.py",
            "from .._messages import Model\n",
            "imports pi_core._messages",
        ),
        ("pi_core/nursery/_abort.py", "import pi_core\n", "imports pi_core (pi_core (core))"),
        (
            "pi_core/_loop.py",
            "from .providers import faux\n",
            "imports pi_core.providers (pi_core.providers)",
        ),
        ("pi_core/_agent.py", "def f():\n    from pi_core.cli import main\n", ":2: pi_core (core)"),
        (
            "pi_core/providers/openai.py",
            "from ..proxy import stream_proxy\n",
            "imports pi_core.proxy",
        ),
        (
            "pi_core/proxy/_client.py",
            "from ..cli import _app\n",
            "imports pi_core.cli (pi_core.cli)",
        ),
    ],
)
def test_an_import_that_looks_up_is_reported(where: str, source: str, expected: str) -> None:
    [problem] = violations(SRC / where, source)
    assert expected in problem


def test_imports_that_look_down_are_allowed() -> None:
    source = (
        "from .. import _messages\nfrom ..nursery import fan_out\nfrom ..providers import faux\n"
    )
    assert violations(SRC / "pi_core/cli/_app.py", source) == []
