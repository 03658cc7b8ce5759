"""``pi-core worker MODULE:ATTR``: serve a :class:`~pi_core.durable.DurableAgents` until stopped.

The worker launches the durable engine in this process, recovers the runs its executor id left
unfinished, serves the queue, and shuts down cleanly at SIGINT or SIGTERM (a run it was serving
stays pending in the database, to be finished when this executor id starts again or another
worker recovers it).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from types import ModuleType
from typing import Any

from ..lowlevel import install_hint
from ._interrupt import EXIT_ERROR, EXIT_OK, stop_signals
from ._setup import UsageError

__all__ = [
    "DB_ENV",
    "add_db_option",
    "add_worker_parser",
    "import_durable",
    "report_error",
    "require_db",
    "worker_command",
]

DB_ENV = "PI_CORE_DB"
"""The environment variable ``--db`` defaults to."""

_READY = "pi-core worker {executor_id}: serving {target} ({names}); Ctrl-C or SIGTERM stops"


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """``--db URL``, defaulting to the environment variable :data:`DB_ENV`."""
    parser.add_argument(
        "--db",
        metavar="URL",
        default=os.environ.get(DB_ENV),
        help="the database: sqlite:///file.sqlite or postgresql://user@host/db "
        f"(default: ${DB_ENV})",
    )


def add_worker_parser(commands: Any) -> None:
    worker = commands.add_parser(
        "worker", help="serve durable runs of the agents a DurableAgents defines"
    )
    worker.add_argument(
        "target", metavar="MODULE:ATTR", help="where the DurableAgents is, e.g. myapp.agents:agents"
    )
    add_db_option(worker)
    worker.add_argument(
        "--executor-id",
        required=True,
        metavar="ID",
        help="this worker's stable name: restarted with the same id, it resumes its runs",
    )
    worker.add_argument(
        "--concurrency", type=int, default=25, help="runs served at once (default: 25)"
    )
    worker.add_argument(
        "--max-result-bytes",
        type=int,
        default=None,
        metavar="N",
        help="the largest tool result a run records, in bytes of JSON (default: 2 MiB)",
    )
    worker.add_argument(
        "--app-version",
        metavar="VERSION",
        help="the version of the agents' code; workers serve only runs of their own version",
    )


def import_durable() -> ModuleType:
    """:mod:`pi_core.durable`, or a usage error saying how to install it."""
    try:
        return importlib.import_module("pi_core.durable")
    except ImportError as exc:
        raise UsageError(
            f"durable runs need the durable extra: {install_hint('durable')} ({exc})"
        ) from None


def require_db(args: argparse.Namespace) -> str:
    """The ``--db`` URL; a usage error when neither the option nor the variable gives one."""
    if not args.db:
        raise UsageError(f"no database: pass --db URL or set {DB_ENV}")
    return str(args.db)


def split_target(target: str) -> tuple[str, str]:
    """``MODULE:ATTR`` as its two parts.

    Raises:
        UsageError: either part is missing.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"expected MODULE:ATTR, e.g. myapp.agents:agents, not {target!r}")
    return module_name, attribute


class TargetError(Exception):
    """The module of a ``MODULE:ATTR`` target raised while it was imported."""


def load_agents(target: str, kind: type) -> Any:
    """Import ``MODULE:ATTR`` (the working directory first on the path) and check its type.

    Raises:
        UsageError: the target is malformed, cannot be found, or is not a ``kind``.
        TargetError: importing the module raised (its own code failed).
    """
    module_name, attribute = split_target(target)
    if os.getcwd() not in sys.path:  # what `python -m` does; the console script does not
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import {module_name!r}: {exc}") from None
    except Exception as exc:  # the module's own code: say what and where, in one line
        raise TargetError(f"importing {module_name!r} raised {_one_line(exc)}") from None
    agents = getattr(module, attribute, None)
    if not isinstance(agents, kind):
        found = "nothing" if agents is None else f"a {type(agents).__name__}"
        raise UsageError(f"{target} is {found}, not a {kind.__name__}")
    return agents


async def worker_command(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; returns the exit status."""
    split_target(args.target)
    database_url = require_db(args)
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.max_result_bytes is not None and args.max_result_bytes < 1:
        raise UsageError("--max-result-bytes must be at least 1")
    durable = import_durable()
    try:
        agents = load_agents(args.target, durable.DurableAgents)
    except TargetError as exc:
        return report_error(exc)
    _log_runs_to_stderr()
    try:
        with stop_signals() as stopped:
            async with durable.open_worker(
                agents,
                database_url,
                executor_id=args.executor_id,
                concurrency=args.concurrency,
                app_version=args.app_version,
                **_limits(args),
            ):
                names = ", ".join(agents.names) or "no agents"
                ready = _READY.format(executor_id=args.executor_id, target=args.target, names=names)
                print(ready, file=sys.stderr, flush=True)
                await stopped()
    except (durable.DurableError, ValueError) as exc:
        return report_error(exc)
    print(f"pi-core worker {args.executor_id}: stopped", file=sys.stderr)
    return EXIT_OK


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    """The caps given on the command line; the others keep open_worker's defaults."""
    given = {"max_result_bytes": args.max_result_bytes}
    return {name: value for name, value in given.items() if value is not None}


def _log_runs_to_stderr() -> None:
    """A worker has no view: what happens to its runs (a cancellation, say) goes to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    runs_logger = logging.getLogger("pi_core.durable")
    runs_logger.setLevel(logging.INFO)
    runs_logger.addHandler(handler)
    runs_logger.propagate = False  # with -v the root handler would write each line twice


def _one_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, with where a syntax error is, on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def report_error(exc: BaseException) -> int:
    """Say what went wrong, in one line on stderr; returns the exit status of a failure."""
    print(f"pi-core: error: {exc}", file=sys.stderr)
    return EXIT_ERROR
