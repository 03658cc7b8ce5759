"""The Node side: install the pinned pi-agent-core versions once, then run ``bench/node/bench.mjs``
cases against either of them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["NODE_DIR", "VERSIONS", "node_unavailable", "node_version", "run_case"]

NODE_DIR = Path(__file__).resolve().with_name("node")
VERSIONS = {"1.6.0": "@earendil-works", "0.73.1": "@mariozechner"}
"""The pi-agent-core versions measured and their npm scopes: the current one first, then the one
pi_core was first ported from."""
_MIN_MAJOR = 20


def _package(version: str) -> Path:
    return NODE_DIR / "node_modules" / VERSIONS[version] / "pi-agent-core" / "package.json"


def node_version() -> str | None:
    """``node --version`` without the ``v``, or ``None`` when Node is not installed."""
    node = shutil.which("node")
    if node is None:
        return None
    completed = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    return completed.stdout.strip().lstrip("v") or None


def node_unavailable() -> str | None:
    """Make the Node side ready (``npm ci`` when needed); return why it cannot run, or ``None``."""
    version = node_version()
    if version is None:
        return "node is not on PATH"
    major = re.match(r"\d+", version)
    if major is None or int(major.group()) < _MIN_MAJOR:
        return f"Node {version} is too old; pi-agent-core needs Node >= {_MIN_MAJOR}"
    if not all(_package(pinned).exists() for pinned in VERSIONS):
        reason = _npm_install()
        if reason is not None:
            return reason
    for pinned in VERSIONS:
        installed = json.loads(_package(pinned).read_text(encoding="utf-8")).get("version")
        if installed != pinned:
            scope = VERSIONS[pinned]
            return f"bench/node has {scope}/pi-agent-core {installed}, not {pinned}; delete node_modules"
    return None


def _npm_install() -> str | None:
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH, so pi-agent-core cannot be installed"
    verb = "ci" if (NODE_DIR / "package-lock.json").exists() else "install"
    command = [npm, verb, "--ignore-scripts", "--no-audit", "--no-fund"]
    print(
        f"bench: installing pi-agent-core {', '.join(VERSIONS)} ({' '.join(command[1:])})",
        file=sys.stderr,
    )
    completed = subprocess.run(
        command, cwd=NODE_DIR, capture_output=True, text=True, check=False, timeout=900
    )
    if completed.returncode != 0 or not all(_package(pinned).exists() for pinned in VERSIONS):
        tail = " / ".join(completed.stderr.strip().splitlines()[-3:])
        return f"npm {verb} failed in bench/node ({tail or 'no output'})"
    return None


def run_case(
    scenario: str, n: int, rounds: int, min_time: float = 0.0, version: str = "1.6.0"
) -> dict[str, Any]:
    """Run one case of ``bench.mjs`` on pi-agent-core ``version`` in its own Node process;
    return its JSON result."""
    node = shutil.which("node")
    assert node is not None, "call node_unavailable() first"
    command = [node, "--expose-gc", "bench.mjs", "--pi", version, "--scenario", scenario]
    command += ["-n", str(n), "--rounds", str(rounds), "--min-time", str(min_time)]
    completed = subprocess.run(
        command, cwd=NODE_DIR, capture_output=True, text=True, check=False, timeout=1800
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"node {version} {scenario} n={n} failed: {completed.stderr.strip()[-500:]}"
        )
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result
