"""``python -m bench.durable``: what durability costs, on SQLite and on Postgres.

    python -m bench.durable                  both databases, 30 runs per measurement
    python -m bench.durable --quick          8 runs per measurement (a minute)
    python -m bench.durable --db postgres --runs 100

For each database (a fresh SQLite file; a throwaway Postgres server started from the machine's
binaries, with its default, durable settings) it measures, each in a process of its own:

* CPU per recorded operation: durable runs of a short shape (3 model steps, 4 tool steps, plus
  the event and steering records) against bare DBOS workflows recording the same operations,
  both enqueued by a client and served by a worker in one process, without the CPU the idle
  engine burns in the meantime; pi_core's share is the difference over the durable figure;
* the end-to-end wall time of a durable run, one at a time, against the same run in-process;
* runs per second with 1 and 2 ``pi-core worker`` processes serving a batch started at once.

JSON lines go to stdout, then a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[2]
PHASES = ("cpu", "workers-1", "workers-2")
_names = itertools.count()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.phase is not None:
        print(json.dumps(anyio.run(_phase, args.phase, args.url, args.runs)))
        return 0
    runs = args.runs or (8 if args.quick else 30)
    rows: list[dict[str, Any]] = []
    for database in args.db or ["sqlite", "postgres"]:
        with _databases(database) as new_database:
            for phase in PHASES:
                row = {"db": database, "phase": phase, **_run_phase(phase, new_database(), runs)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    print(_table(rows))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.durable", description=__doc__)
    parser.add_argument("--db", action="append", choices=("sqlite", "postgres"))
    parser.add_argument("--runs", type=int, help="runs per measurement")
    parser.add_argument("--quick", action="store_true", help="8 runs per measurement")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    return parser


async def _phase(phase: str, url: str, runs: int) -> dict[str, Any]:
    from .measure import cpu_per_operation, throughput

    if phase == "cpu":
        return await cpu_per_operation(url, runs)
    return await throughput(url, int(phase.removeprefix("workers-")), runs)


def _run_phase(phase: str, url: str, runs: int) -> dict[str, Any]:
    """One measurement in a fresh process (the engine is one per process)."""
    command = [sys.executable, "-m", "bench.durable", "--phase", phase, "--url", url]
    done = subprocess.run(
        [*command, "--runs", str(runs)], cwd=REPO, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{phase} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@contextlib.contextmanager
def _databases(database: str) -> Iterator[Any]:
    """A maker of fresh, empty databases of that kind, for the length of the block."""
    if database == "sqlite":
        with tempfile.TemporaryDirectory(prefix="pi-core-bench-") as directory:
            yield lambda: f"sqlite:///{directory}/runs-{next(_names)}.sqlite"
        return
    sys.path.insert(0, str(REPO / "tests"))
    from durable._postgres import running_postgres

    with running_postgres(fast=False) as server:
        yield lambda: server.create_database(f"bench_{next(_names)}")


def _table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table of docs/performance.md."""
    lines = [
        "| database | ops/run | writes/run | busy CPU ms/write durable | busy CPU ms/write bare "
        "DBOS | pi_core share "
        "| ms/run durable | ms/run in-process | runs/s 1 worker | runs/s 2 workers |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for database in dict.fromkeys(row["db"] for row in rows):
        by_phase = {row["phase"]: row for row in rows if row["db"] == database}
        cpu = by_phase["cpu"]
        lines.append(
            f"| {database} | {cpu['operations_per_run']} | {cpu['writes_per_run']} "
            f"| {cpu['durable_busy_cpu_ms_per_write']:.2f} "
            f"| {cpu['bare_busy_cpu_ms_per_write']:.2f} | {cpu['pi_core_share']:.1%} "
            f"| {cpu['durable_wall_ms_per_run']:.0f} | {cpu['in_process_wall_ms_per_run']:.2f} "
            f"| {by_phase['workers-1']['runs_per_second']:.1f} "
            f"| {by_phase['workers-2']['runs_per_second']:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
