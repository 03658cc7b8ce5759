"""Instructions per unit of work, counted by valgrind: a figure that machine load cannot move.

``python -m bench.instructions [--scenario S] [--size N] [--backend B] [--no-floor]``

Wall time on a small shared machine moves by tens of percent from one run to the next; the number
of instructions a case executes hardly moves at all. Each case runs ``python -m bench.case`` (one
warm-up, one round) under ``valgrind --tool=cachegrind --cache-sim=no`` twice: at its size and at
its smoke size. The difference, divided by the difference in units of work, is the cost of one
unit without the interpreter's start-up and imports. The cyclic garbage collector runs as in the
timed benchmark.

What the count misses: cache misses, and time spent waiting (the sleeps of the fan-out and agents
scenarios count nothing). It complements the wall-time ratios of ``python -m bench``; it does not
replace them. Valgrind runs a process some 50 times slower, so the default sizes are the quick
ones (``python -m bench --quick``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .runner import BACKENDS, REPO, RESULTS
from .scenarios import QUICK, SPECS

__all__ = ["Count", "count", "instructions_of", "main", "units_of_work"]

_TIMES = "\N{MULTIPLICATION SIGN}"
_NONE = "\N{EN DASH}"
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


@dataclass(frozen=True)
class Count:
    """The instructions one unit of work of a case costs."""

    impl: str
    scenario: str
    n: int
    backend: str
    per_unit: float


def units_of_work(scenario: str, n: int) -> int:
    """The units a ``bench.case`` process does at size ``n``: its warm-up and one round."""
    spec = SPECS[scenario]
    return max(1, n // spec.warmup_divisor) + n


def instructions_of(valgrind_output: str) -> int:
    """The instruction count in cachegrind's summary."""
    match = _REFS.search(valgrind_output)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{valgrind_output}")
    return int(match.group(1).replace(",", ""))


def count(impl: str, scenario: str, n: int, backend: str, *, repeats: int = 1) -> Count:
    """Count one case at size ``n`` and at the scenario's smoke size; return the cost per unit.

    With ``repeats`` above one, each size is counted that many times and the least count kept: a
    one-off cost (say, a module compiled because another process made its bytecode stale at that
    moment) only ever adds instructions.
    """
    small = SPECS[scenario].smoke
    if n <= small:
        raise ValueError(f"{scenario}: size {n} must exceed the smoke size {small}")
    # A first run at each size writes the bytecode of what it imports (some modules load only at
    # the larger size): neither count below may pay for that.
    for size in (n, small):
        _case(impl, scenario, size, backend, under=[])

    def least(size: int) -> int:
        return min(_run(impl, scenario, size, backend) for _ in range(repeats))

    extra = least(n) - least(small)
    units = units_of_work(scenario, n) - units_of_work(scenario, small)
    return Count(impl, scenario, n, backend, extra / units)


def _run(impl: str, scenario: str, n: int, backend: str) -> int:
    under = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    return instructions_of(_case(impl, scenario, n, backend, under=under))


def _case(impl: str, scenario: str, n: int, backend: str, *, under: list[str]) -> str:
    """Run one case in its own process (``under`` a tool, or not); return its stderr."""
    command = [
        *under,
        sys.executable,
        "-m",
        "bench.case",
        f"--impl={impl}",
        f"--scenario={scenario}",
        "-n",
        str(n),
        f"--backend={backend}",
        "--rounds=1",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return done.stderr


def table(counts: list[Count]) -> str:
    """A Markdown table: pi_core and its floor side by side, in thousands of instructions."""
    lines = [
        f"| scenario | size | unit | backend | pi_core k instr | floor k instr | {_TIMES} floor |",
        "|---|---|---|---|--:|--:|--:|",
    ]
    by_case = {(c.impl, c.scenario, c.n, c.backend): c.per_unit for c in counts}
    for c in counts:
        if c.impl != "pi_core":
            continue
        spec = SPECS[c.scenario]
        floor = by_case.get(("floor", c.scenario, c.n, c.backend))
        floor_text = f"{floor / 1000:,.1f}" if floor else _NONE
        ratio = f"{c.per_unit / floor:.2f}{_TIMES}" if floor else _NONE
        lines.append(
            f"| {c.scenario} | {spec.param}={c.n} | {spec.unit} | {c.backend} "
            f"| {c.per_unit / 1000:,.1f} | {floor_text} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.instructions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--scenario", action="append", choices=sorted(SPECS))
    parser.add_argument("--size", action="append", type=int, help="overrides the quick sizes")
    parser.add_argument("--backend", action="append", choices=BACKENDS)
    parser.add_argument("--no-floor", action="store_true", help="skip the floors")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("bench.instructions: valgrind is not installed", file=sys.stderr)
        return 1
    impls = ("pi_core",) if args.no_floor else ("pi_core", "floor")
    counts = []
    for scenario in args.scenario or list(QUICK):
        for n in args.size or QUICK[scenario]:
            for backend in args.backend or BACKENDS:
                for impl in impls:
                    print(f"{impl} {scenario} n={n} {backend}", file=sys.stderr)
                    result = count(impl, scenario, n, backend)
                    counts.append(result)
                    print(json.dumps(asdict(result)))
    markdown = table(counts)
    print("\n" + markdown)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "instructions.md").write_text(markdown + "\n", encoding="utf-8")
    records = "".join(json.dumps(asdict(result)) + "\n" for result in counts)
    (args.out / "instructions.json").write_text(records, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
