"""Every Python snippet of README.md and docs/*.md runs, as written, offline, in seconds.

How a page's snippets are found and run:

* Each fenced block opened with ```` ```python ```` or ```` ```{code-block} python ```` (MyST
  options such as ``:caption:`` are skipped) is a snippet. By default it is a complete program:
  it runs in a fresh interpreter (``python -c``), with no API key in the environment, and must exit
  0 within :data:`TIMEOUT` seconds.
* An HTML comment on the line(s) right before the fence changes that, for the few blocks that
  cannot stand alone (readers do not see it):

  ``<!-- snippet: continue -->``
      the block continues the page's previous Python block: the program is the previous block's
      program (itself possibly continued) followed by this block.
  ``<!-- snippet: part of tests/some_test.py -->``
      the block is a verbatim slice of that test module, which the suite runs; the block must
      appear in it character for character.
  ``<!-- snippet: server 127.0.0.1:8787 -->``
      the block serves forever: it must accept TCP connections on that address within
      :data:`TIMEOUT` seconds; then it is terminated.

* ```` ```{literalinclude} ../examples/NAME.py ```` shows a script of examples/, which
  tests/test_examples.py runs: the script must exist and be run there.

Some snippets' output is checked as well (the tests after the general one).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT = 60.0

_FENCE = re.compile(
    r"(?P<before>(?:<!-- snippet: (?P<directive>[^>]*?) -->\n)?)"
    r"^```(?:python|\{code-block\} python)\n(?P<options>(?::[^\n]*\n)*\n?)(?P<code>.*?)^```$",
    flags=re.MULTILINE | re.DOTALL,
)
_INCLUDE = re.compile(r"^```\{literalinclude\} \.\./examples/(?P<name>[\w.]+)$", re.MULTILINE)


@dataclass(frozen=True)
class Snippet:
    """One Python block of a page, with the program that runs it."""

    page: str
    line: int
    code: str
    program: str
    directive: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def snippets_of(page: Path) -> Iterator[Snippet]:
    """The Python blocks of ``page``, in order, each with its program."""
    text = page.read_text(encoding="utf-8")
    name = str(page.relative_to(ROOT))
    previous = ""
    for match in _FENCE.finditer(text):
        code, directive = match["code"], match["directive"] or ""
        program = f"{previous}\n{code}" if directive == "continue" else code
        line = text.count("\n", 0, match.start("code"))
        yield Snippet(name, line, code, program, directive)
        previous = program


SNIPPETS = [snippet for page in PAGES for snippet in snippets_of(page)]


def offline_env() -> dict[str, str]:
    """The environment without provider keys or URLs, so nothing can reach a real model."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith(("_API_KEY", "_BASE_URL")) and not key.startswith("PI_CORE_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def run_program(program: str) -> subprocess.CompletedProcess[str]:
    """Run ``program`` in a fresh interpreter; fail with its output unless it exits 0."""
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        env=offline_env(),
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def serves(program: str, address: str) -> None:
    """Start ``program``; pass once ``address`` accepts a connection, then terminate it."""
    host, port = address.rsplit(":", 1)
    child = subprocess.Popen(
        [sys.executable, "-c", program],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=offline_env(),
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while child.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)  # polling a port another process opens: no event to wait on
        _, stderr = child.communicate(timeout=TIMEOUT) if child.poll() is not None else ("", "")
        pytest.fail(f"{address} never accepted a connection (exit {child.returncode}):\n{stderr}")
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            child.communicate(timeout=TIMEOUT)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[snippet.id for snippet in SNIPPETS])
def test_snippet_runs(snippet: Snippet) -> None:
    verb, _, argument = snippet.directive.partition(" ")
    if verb == "part" and argument.startswith("of "):
        source = (ROOT / argument.removeprefix("of ")).read_text(encoding="utf-8")
        assert snippet.code in source, f"{argument} does not contain:\n{snippet.code}"
    elif verb == "server":
        serves(snippet.program, argument)
    else:
        assert verb in {"", "continue"}, f"unknown snippet directive {snippet.directive!r}"
        run_program(snippet.program)


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_included_examples_are_run_by_the_suite(page: Path) -> None:
    runner = (ROOT / "tests" / "test_examples.py").read_text(encoding="utf-8")
    for name in _INCLUDE.findall(page.read_text(encoding="utf-8")):
        assert (ROOT / "examples" / name).is_file(), name
        assert f'"{name}"' in runner or f'"{name.removesuffix(".py")}"' in runner, name


def test_every_page_with_python_has_its_snippets_found() -> None:
    """A fence the pattern misses would silently escape the test: count them another way."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        fences = len(re.findall(r"^```(?:python|\{code-block\} python)$", text, re.MULTILINE))
        found = sum(1 for snippet in SNIPPETS if snippet.page == str(page.relative_to(ROOT)))
        assert found == fences, page


def readme_output(index: int) -> list[str]:
    readme = [snippet for snippet in SNIPPETS if snippet.page == "README.md"]
    return run_program(readme[index].program).stdout.splitlines()


def test_the_readme_agent_runs_both_tool_calls_and_answers() -> None:
    lines = readme_output(0)
    assert lines[0] == "agent_start"
    assert lines.count("tool_execution_end") == 2
    assert lines[-1] == "42 and 2."


def test_the_readme_names_a_real_model() -> None:
    assert readme_output(1) == ["openai-responses 128000"]


def test_the_readme_typed_answer_is_an_instance_of_its_type() -> None:
    assert readme_output(2) == ["Invoice(number='INV-7', total=42.5)"]


def test_the_readme_loop_streams_a_whole_run_and_returns_its_messages() -> None:
    lines = readme_output(3)
    assert lines[0] == "agent_start"
    assert lines.count("tool_execution_end") == 1
    # The loop declares the context's tools first, in a system message.
    assert lines[-2:] == ["agent_end", "system user assistant toolResult assistant"]


def test_the_readme_changes_a_section_of_the_prompt() -> None:
    assert readme_output(4) == ["'You are a guide.\\n\\nAnswer in French.'"]
