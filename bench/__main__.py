"""``python -m bench``: pi_core, its floor and the Node original, side by side.

    python -m bench                      every scenario, both backends, floor and Node
    python -m bench --quick              smaller sizes, one repeat (a minute or two)
    python -m bench --scenario turns --size 500 --size 1000
    python -m bench --sweep              growth curves: JSON/CSV, and a PNG with matplotlib
    python -m bench --profile turns --backend trio --size 2000

JSON lines go to stdout, then the machine and a Markdown table; progress goes to stderr. The
results are also written to bench/results/ (JSON, CSV, Markdown).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import node_bridge, runner
from .case import profile
from .plot import plot_growth
from .scenarios import QUICK, SPECS

SWEEP: dict[str, tuple[int, ...]] = {
    "turns": (250, 500, 1000, 2000, 4000),
    "fanout": (10, 100, 1000, 5000),
    "streaming": (1000, 10_000, 100_000),
    "agents": (10, 100, 1000),
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.profile:
        size = args.size[0] if args.size else SPECS[args.profile].sizes[-1]
        for backend in args.backend or ["asyncio"]:
            profile(args.profile, size, backend, args.top, args.profile_impl)
        return 0
    scenarios = args.scenario or (list(SWEEP) if args.sweep else list(SPECS))
    sizes: dict[str, tuple[int, ...]] = SWEEP if args.sweep else QUICK if args.quick else {}
    if args.size:
        sizes = dict.fromkeys(scenarios, tuple(args.size))
    repeat = args.repeat or (1 if args.quick or args.sweep else 2)
    rounds = args.rounds or (3 if args.quick or args.sweep else 5)
    min_time = args.min_time if args.min_time is not None else 0.3 if args.quick else 1.0

    node = not args.no_node
    if node:
        reason = node_bridge.node_unavailable()
        if reason is not None:
            print(f"bench: skipping the Node column: {reason}", file=sys.stderr)
            node = False
    backends = args.backend or list(runner.BACKENDS)
    groups = runner.plan(scenarios, sizes, backends, floors=not args.no_floor, node=node)
    info = runner.machine()  # the revision measured is the one at the start
    rows = runner.run(groups, rounds, repeat, min_time)
    info["loadavg"] = runner.machine()["loadavg"]

    records = runner.report(rows)
    for record in records:
        print(json.dumps(record, ensure_ascii=False))
    markdown = _machine_line(info) + "\n\n" + runner.table(rows)
    print("\n" + markdown)
    stem = "growth" if args.sweep else "latest"
    written = runner.save(info, records, markdown, args.out, stem)
    if args.sweep or args.plot:
        picture = plot_growth(rows, args.out / f"{stem}.png")
        written.append(picture or Path("(no plot: matplotlib is not installed)"))
    print("\nwritten: " + ", ".join(str(path) for path in written), file=sys.stderr)
    bad = [row for row in rows if row.too_fast or (row.case.impl != "floor" and not row.events_ok)]
    missing = {case for group in groups for case in group} - {row.case for row in rows}
    for case in missing:
        print(f"bench: no result for {case}", file=sys.stderr)
    return 1 if bad or missing else 0


def _machine_line(info: dict[str, Any]) -> str:
    return (
        f"{info['date']} · pi_core {info['revision']} · nproc {info['nproc']} · {info['cpu']} "
        f"· Python {info['python']} "
        f"(anyio {info['anyio']}, trio {info['trio']}) · Node {info['node']} "
        f"(pi-agent-core {' and '.join(info['pi_agent_core'])}) · load average at the end {info['loadavg']}"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--scenario", action="append", choices=sorted(SPECS), help="repeatable; default: all")
    add("--size", action="append", type=int, help="repeatable; overrides the scenario sizes")
    add("--backend", action="append", choices=runner.BACKENDS, help="repeatable; default: both")
    add("--rounds", type=int, help="timed rounds per process, at least (default 5; quick/sweep 3)")
    add("--min-time", type=float, help="more rounds until this many seconds (default 1; quick 0.3)")
    add("--repeat", type=int, help="processes per case, interleaved (default 2; quick/sweep 1)")
    add("--quick", action="store_true", help="smaller sizes, one repeat")
    add("--sweep", action="store_true", help="growth sizes; writes growth.{json,csv,png}")
    add("--plot", action="store_true", help="also draw the growth plot for this run")
    add("--no-node", action="store_true", help="skip the Node column")
    add("--no-floor", action="store_true", help="skip the floors")
    add("--out", type=Path, default=runner.RESULTS, help="results directory")
    add("--profile", choices=sorted(SPECS), help="profile one scenario in-process under cProfile")
    add("--profile-impl", choices=("pi_core", "floor"), default="pi_core")
    add("--top", type=int, default=25, help="functions to show with --profile")
    return parser


if __name__ == "__main__":
    sys.exit(main())
