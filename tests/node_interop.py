"""Node with the TypeScript Pi's packages, for interop tests.

The packages are pinned in a directory's package.json and lock file: ``tests/proxy/interop``
holds pi-agent-core and pi-ai of both eras, 1.6.0 (``@earendil-works``) and 0.73.1
(``@mariozechner``), side by side under their own names; its scripts take the version to run as
their first argument (see ``pi.mjs`` there); the coding agent's directory, for session files,
is another. :func:`find_node` (behind the ``node`` fixture of tests/conftest.py) runs
``npm ci`` there when they are missing, and skips the test, saying why, when node >= 20 or npm is
not on PATH or the install fails; with ``PI_CORE_REQUIRE_NODE=1`` in the environment (the nox
session ``interop`` sets it) that is a failure instead, so that CI cannot pass by skipping.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["INTEROP", "NODE_DEADLINE", "VERSIONS", "find_node"]

INTEROP = Path(__file__).parent / "proxy" / "interop"
NODE_DEADLINE = 60.0
VERSIONS = ("0.73.1", "1.6.0")
"""The pi-agent-core / pi-ai versions in ``INTEROP``, the argument its scripts take."""


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("PI_CORE_REQUIRE_NODE") == "1":
        pytest.fail(f"Node interop cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def find_node(directory: Path = INTEROP) -> str:
    """The node executable, with the packages pinned in ``directory`` installed (else a skip)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _unavailable(f"{'node' if node is None else 'npm'} is not on PATH")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    major = version.stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        _unavailable(f"node >= 20 is needed, found {version.stdout.strip() or 'no version'}")
    with _install_lock(directory):
        if not _installed(directory):
            _npm_ci(npm, directory)
    return node


@contextlib.contextmanager
def _install_lock(directory: Path) -> Iterator[None]:
    """Held while ``npm ci`` may run in ``directory``: the suite's workers would otherwise run
    it there at once and trip over each other's files."""
    with open(directory / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _npm_ci(npm: str, directory: Path) -> None:
    """Install the packages pinned in ``directory`` (else a skip, or a failure)."""
    where = directory.relative_to(Path(__file__).parent.parent)
    command = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        done = subprocess.run(
            command, cwd=directory, capture_output=True, text=True, timeout=600, check=False
        )
    except subprocess.TimeoutExpired:
        _unavailable(f"npm ci in {where} took more than 600 s")
    if done.returncode != 0 or not _installed(directory):
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        _unavailable(f"npm ci in {where} failed ({done.returncode}): {tail}")


def _installed(directory: Path) -> bool:
    """Whether every dependency of ``directory``'s package.json is installed at its version."""
    try:
        wanted = json.loads((directory / "package.json").read_text())["dependencies"]
        return all(
            json.loads((directory / "node_modules" / name / "package.json").read_text())["version"]
            == version
            for name, version in wanted.items()
        )
    except (OSError, ValueError, KeyError):
        return False
