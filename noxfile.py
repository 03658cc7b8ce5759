"""Development sessions: ``nox -s tests`` runs the whole suite on asyncio and trio."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests", "tests_asyncio_only", "lint", "typing"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = ["3.11"]
OTHER_PYTHONS = ["3.10", "3.12", "3.13"]
"""The other Pythons pi_core supports; ``tests_other_pythons`` runs on those that are installed."""

WORKERS = ("-n", "4", "--dist", "worksteal")
"""pytest-xdist workers: many tests wait on real servers and processes, so more workers than a
small machine's cores still pay. A worker that runs out of tests takes half of another's, so the
slow tests (started first, see tests/conftest.py) are not left to one worker at the end.
``nox -s tests -- -n 0`` runs the suite in one process."""


def _install_group(session: nox.Session, *groups: str) -> None:
    args = [arg for group in groups for arg in ("--group", group)]
    session.install("--upgrade", "pip>=25.1")
    session.install("-e", ".", *args)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The whole test suite, every async test on asyncio and on trio."""
    _install_group(session, "test")
    session.run("pytest", *WORKERS, *session.posargs, env={"HYPOTHESIS_PROFILE": "ci"})


def _without_trio(session: nox.Session) -> None:
    session.run("pip", "uninstall", "--yes", "trio")
    session.run(
        "python",
        "-c",
        "import importlib.util, pi_core; assert not importlib.util.find_spec('trio')",
    )


@nox.session(python=PYTHON)
def tests_asyncio_only(session: nox.Session) -> None:
    """The suite without trio installed: pi_core must import and work on asyncio alone."""
    _install_group(session, "test")
    _without_trio(session)
    session.run("pytest", "-q", *WORKERS, *session.posargs)


OTHER_PYTHON_BACKENDS = {"3.10": "asyncio", "3.13": "trio"}
"""``tests_other_pythons`` on the two ends of the range takes one backend each: the oldest
Python runs without trio installed (as a user on asyncio alone has it), the newest on trio
alone. Python 3.12 runs both."""


@nox.session(python=OTHER_PYTHONS)
def tests_other_pythons(session: nox.Session) -> None:
    """The suite on Python 3.10 (asyncio alone, trio not installed), 3.12 (both backends) and
    3.13 (trio); ``--no-error-on-missing-interpreters`` skips the ones this machine lacks.
    ``-- -m "not processes"`` leaves out the tests that start real processes."""
    _install_group(session, "test")
    backend = OTHER_PYTHON_BACKENDS.get(str(session.python))
    if backend == "asyncio":
        _without_trio(session)
    env = {"PI_CORE_TEST_BACKENDS": backend} if backend else {}
    session.run("pytest", "-q", *WORKERS, *session.posargs, env=env)


@nox.session(python=PYTHON, venv_backend="uv")
def tests_lowest(session: nox.Session) -> None:
    """The suite against the lowest versions pyproject allows (uv's lowest-direct resolution)."""
    session.install(
        "--resolution",
        "lowest-direct",
        "-e",
        ".[trio,server,testing,durable,mcp,otel,chat,ui]",
        "pytest>=8.3",
        "pytest-xdist>=3.6",
        "mcp-server-time>=2026.10.19",
        "opentelemetry-sdk>=1.28",
        "playwright>=1.65",
    )
    session.run("pytest", "-q", *WORKERS, *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff>=0.8")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def typing(session: nox.Session) -> None:
    """mypy strict over src and tests; pyright's verifytypes over the public API."""
    _install_group(session, "typing")
    session.run("mypy")
    session.run("pyright", "--verifytypes", "pi_core", "--ignoreexternal")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The Sphinx site in docs/_build/html, warnings as errors."""
    _install_group(session, "docs")
    session.run("sphinx-build", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The benchmarks: pi_core on asyncio and trio, its floor, and pi-agent-core 0.73.1 on Node.

    ``nox -s bench -- --quick``; see ``python -m bench --help`` and docs/performance.md.
    """
    session.install("-e", ".[trio]")
    session.run("python", "-m", "bench", *session.posargs)


@nox.session(python=PYTHON)
def bench_peers(session: nox.Session) -> None:
    """pi_core next to pydantic-ai and openai-agents (pinned in bench/peers/requirements.txt) on
    the turns scenario, each in its own process: ``nox -s bench_peers -- --turns 500``.
    """
    session.install("-e", ".[trio]", "-r", "bench/peers/requirements.txt")
    session.run("python", "-m", "bench.peers", *session.posargs)


@nox.session(python=PYTHON)
def interop(session: nox.Session) -> None:
    """The TypeScript Pi of both eras, pi-agent-core and pi-ai 1.6.0 and 0.73.1, against pi_core:
    their streamProxy clients against our proxy server, proxy servers on their pi-ai against our
    client, their transcripts loaded and written back here and ours read there, their Responses
    and Gemini providers against our recorded streams, and the Pi coding agents' (1.6.0 and 0.73.1) session
    managers against pi_core's session files, pi-ai's thinking levels for every catalogue model
    against ours; the official AG-UI client and the AI SDK's
    stream reader against pi_core.ui. Needs node >= 20 and npm: the npm packages are
    installed from the lock files of every fixture directory under tests/, and a test that
    cannot run Node fails here instead of skipping.
    """
    _install_group(session, "test")
    for lock in sorted(Path("tests").glob("**/package-lock.json")):
        if "node_modules" in lock.parts:
            continue
        npm_ci = ["npm", "ci", "--prefix", str(lock.parent), "--no-audit", "--no-fund"]
        session.run(*npm_ci, "--loglevel=error", external=True)
    files = [
        "tests/proxy/test_proxy_interop.py",
        "tests/providers/test_ts_interop.py",
        "tests/test_transcript_interop.py",
        "tests/test_thinking_levels.py",
        "tests/sessions/test_session_interop.py",
        "tests/ui/test_ag_ui_client.py",
        "tests/ui/test_ui_message_stream.py",
    ]
    session.run("pytest", *files, "-v", "-rs", *session.posargs, env={"PI_CORE_REQUIRE_NODE": "1"})
