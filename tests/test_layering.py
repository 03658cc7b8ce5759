"""The layering rule of pi_core, read from the source with ``ast``: every package only looks down.

The nursery imports nothing of pi_core; the core imports only the nursery; the models catalogue,
the providers, then proxy / durable / mcp / tracing / testing, then the CLI each import only what
is below them. Imports inside functions and under ``TYPE_CHECKING`` count too. A new subpackage
must be given its layer here (see docs/architecture.md).

Above the providers, a package uses the core only through its public modules (``pi_core``,
``pi_core.lowlevel``, ``pi_core.nursery`` …) and the names they export: the core's private modules
are free to change. The proxy, a provider over HTTP, shares the providers' kit of core internals.
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
    "pi_core.sse": 4,
    "pi_core.ui": 4,
    "pi_core.sessions": 4,
    "pi_core.cli": 5,
}
"""Each area and its layer: an area may import its own modules and those of lower layers."""

PUBLIC_ONLY_FROM = 4
"""From this layer up, an import of the core names a public module and names it exports."""

PROVIDER_KIT = {
    "pi_core._http",
    "pi_core._options",
    "pi_core._redact",
    "pi_core._request_body",
    "pi_core._texts",
}
"""The core's internals that stream implementations and the servers share: the HTTP driver,
stream helpers, redaction, texts and the capped request body. The providers (below the rule),
the proxy and the UI servers use them."""

KIT_USERS = {"pi_core.providers", "pi_core.proxy", "pi_core.ui"}

PACKAGING = {"pi_core._public"}
"""Not API: the helper every public module calls to name itself the home of its exports."""

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
    if LAYERS[own] >= PUBLIC_ONLY_FROM:
        problems.extend(private_core_imports(path, source, own))
    return problems


def private_core_imports(path: Path, source: str, own: str) -> list[str]:
    """The imports in ``source`` of a private module of the core (or the nursery), or of a name a
    public one does not export."""
    module = module_name(path)
    problems = []
    for line, target, names in imported_names(source, module, path.name == "__init__.py"):
        found = _existing(target)
        if area_of(found) not in (CORE, "pi_core.nursery") or found in PACKAGING:
            continue
        if own in KIT_USERS and found in PROVIDER_KIT:
            continue
        where = f"{path.relative_to(SRC)}:{line}: {own} imports"
        if _is_private(found):
            problems.append(f"{where} the private {found}")
            continue
        exported = exported_names(found)
        for name in names:
            if _is_private(f"{found}.{name}"):  # ``from pi_core import _loop``
                problems.append(f"{where} the private {found}.{name}")
            elif name not in exported:
                problems.append(f"{where} {name} from {found}, which does not export it")
    return problems


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def imported_names(source: str, module: str, is_package: bool) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every ``from pi_core… import names`` in ``source``."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] == "pi_core":
                found.append((node.lineno, target, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend(
                (node.lineno, alias.name, [])
                for alias in node.names
                if alias.name.split(".")[0] == "pi_core"
            )
    return found


def exported_names(module: str) -> set[str]:
    """The ``__all__`` of a public module of pi_core, read from its source (and its submodules,
    which ``from package import submodule`` names)."""
    base = SRC.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            names.update(ast.literal_eval(node.value))
    if base.is_dir():
        names.update(child.stem for child in base.iterdir() if not child.stem.startswith("_"))
    return names


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
    source = "from .. import serialization\nfrom ..nursery import fan_out\nfrom ..providers import faux\n"
    assert violations(SRC / "pi_core/cli/_app.py", source) == []


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        (
            "pi_core/durable/_dbos_run.py",
            "from .._loop import _Run\n",
            "imports the private pi_core._loop",
        ),
        (
            "pi_core/durable/_dbos_run.py",
            "from .._batch import ToolCallAborted\n",
            "imports the private pi_core._batch",
        ),
        (
            "pi_core/mcp/_tools.py",
            "def f():\n    from ..nursery._cancel import is_stray_cancellation\n",
            ":2: pi_core.mcp imports the private pi_core.nursery._cancel",
        ),
        (
            "pi_core/cli/_app.py",
            "from .. import needs_await\n",
            "imports needs_await from pi_core, which does not export it",
        ),
        (
            "pi_core/tracing/_otel.py",
            "from pi_core._texts import exception_text\n",
            "imports the private pi_core._texts",
        ),
        (
            "pi_core/testing/_stream.py",
            "import pi_core._messages\n",
            "imports the private pi_core._messages",
        ),
        (
            "pi_core/cli/_app.py",
            "from .. import _messages\n",
            "imports the private pi_core._messages",
        ),
    ],
)
def test_a_private_import_of_the_core_above_the_providers_is_reported(
    where: str, source: str, expected: str
) -> None:
    [problem] = violations(SRC / where, source)
    assert expected in problem


def test_public_names_and_the_kit_are_allowed_where_the_rule_says() -> None:
    source = (
        "from .. import AgentLoopConfig\nfrom ..lowlevel import ReplyReader\n"
        "from ..nursery import fan_out\nfrom .._public import publish_module_names\n"
        "from ..providers import faux\n"
    )
    assert violations(SRC / "pi_core/durable/_dbos_run.py", source) == []
    kit = "from .._http import HttpCall\nfrom .._texts import clip\n"
    assert violations(SRC / "pi_core/proxy/_client.py", kit) == []
    assert len(violations(SRC / "pi_core/durable/_dbos_run.py", kit)) == 2
    # The providers are the core's own provider layer: its internals are theirs to use.
    assert violations(SRC / "pi_core/providers/openai.py", "from .._loop import _Run\n") == []


def test_architecture_names_every_engine_seam() -> None:
    import pi_core.lowlevel

    page = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    unnamed = [name for name in pi_core.lowlevel.__all__ if name not in page]
    assert not unnamed, f"docs/architecture.md does not name these seams: {unnamed}"
