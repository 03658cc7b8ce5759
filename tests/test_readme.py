"""The README's examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_twenty_line_example_runs() -> None:
    example = python_blocks()[0]
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "agent_start"
    assert lines.count("tool_execution_end") == 2
    assert lines[-1] == "42 and 2."


def test_the_loop_snippet_runs_after_the_example() -> None:
    first, loop = python_blocks()[:2]
    setup = first.split("async def main")[0]
    body = textwrap.indent(loop, "    ")
    program = f"""{setup}
async def main() -> None:
    model = FauxProvider()
    model.set_responses([faux_assistant_message("sum")])
{body}
    assert [m.role for m in new_messages] == ["user", "assistant"]

anyio.run(main)
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines()[-1] == "agent_end"
