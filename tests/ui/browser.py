"""Headless Chromium (Debian's ``chromium``) driven by Playwright, and ``pi-core serve`` in a
child process, for the page's tests."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from _cli_process import LiveCli

__all__ = ["DOCS", "chromium_path", "distinct_colors", "served_page"]

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[1] / "docs" / "images"


def chromium_path() -> str:
    """The system's Chromium, else a skip; under CI (which installs Debian's) or with
    ``PI_CORE_REQUIRE_CHROMIUM=1``, a failure: a missing browser must not pass as skipped."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    missing = "no chromium on PATH (apt-get install chromium)"
    if os.environ.get("CI") or os.environ.get("PI_CORE_REQUIRE_CHROMIUM") == "1":
        pytest.fail(missing)
    pytest.skip(missing)


@contextlib.contextmanager
def served_page(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[LiveCli, str]]:
    """``pi-core serve --port 0 ARGS`` with tests/ui importable; yields it and its URL."""
    paths = [str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]
    child_env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p), **(env or {})}
    with LiveCli("serve", "--port", "0", *args, env=child_env, merge_stderr=True) as server:
        match = re.search(r"Running on (http://127\.0\.0\.1:\d+)", server.wait_for("Running on"))
        assert match is not None, server.output
        yield server, match.group(1)
        server.interrupt()
        assert server.finish() == 0, server.output


def distinct_colors(page: Any, png: bytes) -> int:
    """How many colours the screenshot has (the browser decodes it): a blank page has one."""
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    script = """async (url) => {
      const image = new Image();
      image.src = url;
      await image.decode();
      const canvas = new OffscreenCanvas(image.width, image.height);
      const context = canvas.getContext("2d");
      context.drawImage(image, 0, 0);
      const data = context.getImageData(0, 0, image.width, image.height).data;
      const colors = new Set();
      for (let i = 0; i < data.length; i += 4 * 7) colors.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      return colors.size;
    }"""
    return int(page.evaluate(script, url))
