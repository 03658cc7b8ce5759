"""Node with the TypeScript Pi's packages (0.73.1), for interop tests.

The packages are pinned in a directory's package.json and lock file: ``tests/proxy/interop``
(pi-agent-core and pi-ai) and ``tests/cli/pi_interop`` (the coding agent, for session files).
:func:`find_node` (behind the ``node`` fixture of tests/conftest.py) runs ``npm ci`` there when
they are missing, and skips the test, saying why, when node >= 20 or npm is not on PATH or the
install fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["INTEROP", "NODE_DEADLINE", "PINNED", "find_node"]

INTEROP = Path(__file__).parent / "proxy" / "interop"
NODE_DEADLINE = 60.0
PINNED = "0.73.1"


def find_node(directory: Path = INTEROP) -> str:
    """The node executable, with the packages pinned in ``directory`` installed (else a skip)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"{'node' if node is None else 'npm'} is not on PATH")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    major = version.stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        pytest.skip(f"node >= 20 is needed, found {version.stdout.strip() or 'no version'}")
    if not _installed(directory):
        where = directory.relative_to(Path(__file__).parent.parent)
        command = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        try:
            done = subprocess.run(
                command, cwd=directory, capture_output=True, text=True, timeout=600, check=False
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm ci in {where} took more than 600 s")
        if done.returncode != 0 or not _installed(directory):
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            pytest.skip(f"npm ci in {where} failed ({done.returncode}): {tail}")
    return node


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
