"""One benchmark case in its own process: warm up, time several rounds, print one JSON line.

``python -m bench.case --impl pi_core --scenario turns -n 2000 --backend trio --rounds 5``

Memory figures come from ``/proc/self/status`` (Linux): ``rss_mb`` is the peak resident set above
the baseline taken after imports; ``rss_growth_mb`` is the largest growth of the resident set over
one round, after a garbage collection on both sides (the ``memory`` scenario's figure).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

from . import floors, scenarios
from .scenarios import SPECS, Run

__all__ = ["measure", "profile"]

IMPLS: dict[str, Callable[[str, int], Run]] = {
    "pi_core": scenarios.prepare,
    "floor": floors.prepare,
}
DEFAULT_ROUNDS = 5
MAX_ROUNDS = 200


def measure(
    impl: str, scenario: str, n: int, backend: str, rounds: int, min_time: float = 0.0
) -> dict[str, Any]:
    """Warm up, then time one case; return the raw samples.

    It runs at least ``rounds`` rounds, and more (up to ``MAX_ROUNDS``) until the timed rounds add
    up to ``min_time`` seconds, so that short cases get enough samples for a stable median.
    """
    spec = SPECS[scenario]
    prepare = IMPLS[impl]
    if spec.rounds is not None:
        rounds, min_time = spec.rounds, 0.0
    baseline = _rss_kb("VmRSS")
    _reset_peak_rss()
    seconds: list[float] = []
    growth_kb: list[int] = []
    events: set[int] = set()

    async def main() -> None:
        await prepare(scenario, max(1, n // spec.warmup_divisor))()
        while len(seconds) < rounds or (sum(seconds) < min_time and len(seconds) < MAX_ROUNDS):
            run = prepare(scenario, n)
            gc.collect()
            before = _rss_kb("VmRSS")
            started = time.perf_counter()
            events.add(await run())
            seconds.append(time.perf_counter() - started)
            del run
            gc.collect()
            growth_kb.append(_rss_kb("VmRSS") - before)

    anyio.run(main, backend=backend)
    return {
        "impl": impl,
        "scenario": scenario,
        "backend": backend,
        "n": n,
        "seconds": seconds,
        "events": sorted(events),
        "rss_mb": (_rss_kb("VmHWM") - baseline) / 1024,
        "rss_growth_mb": max(growth_kb) / 1024,
    }


def profile(scenario: str, n: int, backend: str, top: int = 25, impl: str = "pi_core") -> None:
    """Run one warm-up and one profiled round under cProfile; print the top functions."""
    prepare = IMPLS[impl]
    profiler = cProfile.Profile()

    async def main() -> None:
        await prepare(scenario, n)()
        run = prepare(scenario, n)
        profiler.enable()
        await run()
        profiler.disable()

    anyio.run(main, backend=backend)
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    print(f"== {impl} {scenario} n={n} on {backend}: top {top} by own time ==")
    stats.sort_stats("tottime").print_stats(top)
    print(f"== top {top} by cumulative time ==")
    stats.sort_stats("cumulative").print_stats(top)


def _rss_kb(field: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource  # not on Windows; the peak is all it can tell

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak_rss() -> None:
    """Make VmHWM start from here (Linux ≥ 4.0); elsewhere the peak covers the whole process."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=sorted(IMPLS), default="pi_core")
    parser.add_argument("--scenario", choices=sorted(SPECS), required=True)
    parser.add_argument("-n", type=int, required=True)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="at least this many")
    parser.add_argument("--min-time", type=float, default=0.0, help="seconds of timed rounds")
    args = parser.parse_args(argv)
    result = measure(args.impl, args.scenario, args.n, args.backend, args.rounds, args.min_time)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
