"""Every install line in the README, the docs, the examples and the CLI's hints works as written.

pi_core is installed from a checkout (``pip install .`` in its root folder), so an install line
that names a distribution (``pi-core``, an unrelated package that also provides ``import pi_core``,
or ``pi-agent-core-py``, not on PyPI) fails or installs the wrong thing.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    tomllib = pytest.importorskip("tomli")

from pi_core import _texts
from pi_core._texts import install_hint

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "examples").glob("*.py"),
        *(ROOT / "src").rglob("*.py"),
    ]
)
INSTALL_LINE = re.compile(r"pip install ([^`\n)]*)")
CHECKOUT_TARGET = re.compile(r"^\.(\[(?P<extras>[a-z,]+)\])?$")


def install_lines(page: Path) -> list[tuple[int, str]]:
    """``(line number, arguments)`` of every ``pip install`` in ``page``."""
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 1, match.group(1))
        for match in INSTALL_LINE.finditer(text)
    ]


def bad_targets(arguments: str) -> list[str]:
    """The arguments of one install line that do not install pi_core from a checkout."""
    try:
        words = shlex.split(arguments.split("#")[0])
    except ValueError:  # an f-string's placeholder, not a line as printed
        return []
    bad = []
    for word in words:
        if word.startswith(("pi-core", "pi_core", "pi-agent-core-py")):
            bad.append(word)
        target = CHECKOUT_TARGET.match(word)
        if word.startswith(".") and target is None:
            bad.append(word)
        elif target and target["extras"] and not set(target["extras"].split(",")) <= EXTRAS:
            bad.append(f"{word} (extras are {sorted(EXTRAS)})")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_install_lines_install_pi_core_from_a_checkout(page: Path) -> None:
    wrong = [
        f"{page.relative_to(ROOT)}:{line}: pip install {arguments} ({', '.join(bad)})"
        for line, arguments in install_lines(page)
        if (bad := bad_targets(arguments))
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_names_the_unrelated_pi_core_distribution(page: Path) -> None:
    assert "pi-core[" not in page.read_text(encoding="utf-8")


def test_the_scan_catches_what_it_must() -> None:
    assert bad_targets("'pi-core[mcp]'") == ["pi-core[mcp]"]
    assert bad_targets('"pi-agent-core-py[trio]" pytest') == ["pi-agent-core-py[trio]"]
    assert bad_targets("'.[nope]'")
    assert not bad_targets("'.[trio,mcp]' mcp-server-time  # in the checkout")


def test_pyproject_names_where_pi_core_comes_from() -> None:
    urls = PYPROJECT["project"]["urls"]
    assert urls and all(url.startswith("https://") for url in urls.values())


def write_distribution(folder: Path, record: Mapping[str, object] | None) -> None:
    """An installed pi_core's metadata in ``folder``, with ``record`` as its direct_url.json."""
    info = folder / f"{_texts.DISTRIBUTION.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {_texts.DISTRIBUTION}\nVersion: 0.1.0\n", encoding="utf-8"
    )
    if record is not None:
        (info / "direct_url.json").write_text(json.dumps(record), encoding="utf-8")


def hint_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: Mapping[str, object] | None
) -> str:
    write_distribution(tmp_path, record)
    monkeypatch.syspath_prepend(str(tmp_path))
    return install_hint("mcp")


def test_the_hint_names_the_checkout_pi_core_was_installed_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "my checkout"
    record = {"url": checkout.as_uri(), "dir_info": {}}
    hint = hint_in(tmp_path, monkeypatch, record)
    assert shlex.split(hint) == ["pip", "install", f"{checkout}[mcp]"]


def test_the_hint_keeps_an_editable_install_editable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = {"url": ROOT.as_uri(), "dir_info": {"editable": True}}
    hint = hint_in(tmp_path, monkeypatch, record)
    assert shlex.split(hint) == ["pip", "install", "-e", f"{ROOT}[mcp]"]


@pytest.mark.parametrize(
    "record",
    [None, {"url": "https://example.org/pi.whl", "archive_info": {}}, {"nonsense": 1}],
    ids=["no record", "an archive", "a broken record"],
)
def test_without_a_checkout_the_hint_names_the_checkouts_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: Mapping[str, object] | None
) -> None:
    assert hint_in(tmp_path, monkeypatch, record) == "pip install '.[mcp]'"


def test_the_hint_of_this_installation_works_as_printed() -> None:
    """The test environment's pi_core was installed from a checkout: the hint names it."""
    words = shlex.split(install_hint("trio"))
    folder, _, extra = words[-1].removesuffix("]").partition("[")
    assert extra == "trio"
    pyproject = tomllib.loads((Path(folder) / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == _texts.DISTRIBUTION
    assert words[:2] == ["pip", "install"]
