"""Run the cases (each in its own process, interleaved), aggregate medians, report and save.

Every case is a fresh process: ``python -m bench.case`` for pi_core and the floor on each backend,
``node bench/node/bench.mjs`` for the original. The cases of one scenario and size run back to
back (pi_core, floor, on each backend, then Node), and the whole plan is repeated ``repeat``
times, so slow drifts of the machine hit every column alike. Figures are medians over all rounds.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from . import node_bridge
from .scenarios import SPECS

__all__ = ["Case", "Row", "machine", "plan", "report", "run", "save", "summarize", "table"]

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
BACKENDS = ("asyncio", "trio")
_TIMES = "\N{MULTIPLICATION SIGN}"
_NONE = "\N{EN DASH}"


@dataclass(frozen=True)
class Case:
    impl: str
    """``pi_core``, ``floor`` or ``node``."""
    scenario: str
    n: int
    backend: str
    """``asyncio`` or ``trio``; ``node`` for the original."""


@dataclass(frozen=True)
class Row:
    """The aggregate of one case over every round of every repeat."""

    case: Case
    seconds: float
    """The median of every round."""
    seconds_min: float
    per_unit_us: float
    events: tuple[int, ...]
    rss_mb: float
    rss_growth_mb: float
    rounds: int

    @property
    def events_ok(self) -> bool:
        return self.events == (expected_events(self.case),)

    @property
    def too_fast(self) -> bool:
        """Faster than the scenario's sleeps allow: tools that should wait did not.

        Node's timers count whole milliseconds and may fire up to one early, so a 10 ms sleep can
        take 9 ms there; a batch that skipped its sleeps would be far faster still.
        """
        least = SPECS[self.case.scenario].least_seconds(self.case.n)
        return self.seconds_min < least - 0.0015


def expected_events(case: Case) -> int:
    """The event count a run of ``case`` must emit: the scenario's plus the system messages
    that declare the tools, for pi_core and Node 1.6.0; 0.73.1's for Node 0.73.1."""
    spec = SPECS[case.scenario]
    if case.impl != "node":
        return spec.events(case.n) + spec.declared(case.n)
    count = (spec.node_events or spec.events)(case.n)
    if case.backend == "1.6.0":
        count += spec.declared(case.n)
    return count


def plan(
    scenarios: Sequence[str],
    sizes: Mapping[str, Sequence[int]],
    backends: Sequence[str],
    *,
    floors: bool = True,
    node: bool = True,
) -> list[list[Case]]:
    """The groups of cases to run back to back: one group per scenario and size.

    ``sizes`` overrides the sizes of the scenarios it names.
    """
    groups = []
    for scenario in scenarios:
        for n in sizes.get(scenario, SPECS[scenario].sizes):
            group = []
            for backend in backends:
                group.append(Case("pi_core", scenario, n, backend))
                if floors:
                    group.append(Case("floor", scenario, n, backend))
            if node:
                group.extend(Case("node", scenario, n, pinned) for pinned in node_bridge.VERSIONS)
            groups.append(group)
    return groups


def run(
    groups: Sequence[Sequence[Case]], rounds: int, repeat: int, min_time: float = 0.0
) -> list[Row]:
    """Run every group ``repeat`` times, interleaved; return one aggregated row per case.

    Each process runs at least ``rounds`` rounds and goes on until ``min_time`` seconds of them.
    """
    samples: dict[Case, list[dict[str, Any]]] = {}
    total = sum(len(group) for group in groups) * repeat
    done = 0
    for _ in range(repeat):
        for group in groups:
            for case in group:
                done += 1
                _progress(f"[{done}/{total}] {case.impl} {case.scenario} n={case.n} {case.backend}")
                try:
                    samples.setdefault(case, []).append(_run_case(case, rounds, min_time))
                except (RuntimeError, subprocess.SubprocessError, ValueError) as exc:
                    _progress(f"  failed: {exc}")
    return summarize(samples)


def _run_case(case: Case, rounds: int, min_time: float) -> dict[str, Any]:
    if case.impl == "node":
        return node_bridge.run_case(case.scenario, case.n, rounds, min_time, case.backend)
    command = [sys.executable, "-m", "bench.case", "--impl", case.impl]
    command += ["--scenario", case.scenario, "-n", str(case.n), "--backend", case.backend]
    command += ["--rounds", str(rounds), "--min-time", str(min_time)]
    completed = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, check=False, timeout=1800
    )
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip()[-800:])
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def summarize(samples: dict[Case, list[dict[str, Any]]]) -> list[Row]:
    """Medians over all rounds (seconds), over processes (peak RSS); the worst RSS growth."""
    rows = []
    for case, results in samples.items():
        all_seconds = [s for result in results for s in result["seconds"]]
        seconds = statistics.median(all_seconds)
        events = sorted({e for result in results for e in result["events"]})
        rows.append(
            Row(
                case=case,
                seconds=seconds,
                seconds_min=min(all_seconds),
                per_unit_us=SPECS[case.scenario].per_unit_us(seconds, case.n),
                events=tuple(events),
                rss_mb=statistics.median(result["rss_mb"] for result in results),
                rss_growth_mb=max(result["rss_growth_mb"] for result in results),
                rounds=len(all_seconds),
            )
        )
    return rows


# --- reporting -------------------------------------------------------------------------------------


def report(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One JSON-able record per case; pi_core records carry their floor, Node and ratios."""
    index = {row.case: row for row in rows}
    records = []
    for row in rows:
        case = row.case
        floor = index.get(Case("floor", case.scenario, case.n, case.backend))
        record = _record(row)
        if case.impl == "pi_core":
            record["floor_per_unit_us"] = _round(floor.per_unit_us) if floor else None
            record["ratio"] = _ratio(row, floor)
            for pinned, key in _NODE_KEYS.items():
                node = index.get(Case("node", case.scenario, case.n, pinned))
                record[f"{key}_per_unit_us"] = _round(node.per_unit_us) if node else None
                record[f"vs_{key}"] = _ratio(row, node)
        records.append(record)
    return records


_NODE_KEYS = {"1.6.0": "node", "0.73.1": "node_0_73"}
"""The record keys of each Node version: the current one is plain ``node``."""


def _record(row: Row) -> dict[str, Any]:
    spec = SPECS[row.case.scenario]
    return {
        "scenario": row.case.scenario,
        "backend": row.case.backend,
        "impl": row.case.impl,
        "params": {spec.param: row.case.n},
        "seconds": round(row.seconds, 6),
        "seconds_min": round(row.seconds_min, 6),
        "per_unit_us": _round(row.per_unit_us),
        "events": row.events[0] if len(row.events) == 1 else list(row.events),
        "events_expected": expected_events(row.case) if row.case.impl != "floor" else None,
        "rss_mb": round(row.rss_mb, 2),
        "rss_growth_mb": round(row.rss_growth_mb, 2),
        "rounds": row.rounds,
        "too_fast": row.too_fast,
        "floor_per_unit_us": None,
        "ratio": None,
    }


def _ratio(row: Row, reference: Row | None) -> float | None:
    if reference is None or reference.per_unit_us <= 0:
        return None
    return round(row.per_unit_us / reference.per_unit_us, 2)


def _round(value: float) -> float:
    return round(value, 2 if abs(value) < 100 else 1)


def table(rows: Sequence[Row]) -> str:
    """A Markdown table: pi_core, its floor and Node side by side, per scenario, size, backend."""
    index = {row.case: row for row in rows}
    lines = [
        f"| scenario | size | unit | backend | pi_core | floor | {_TIMES} floor | Node 1.6.0 "
        f"| {_TIMES} Node | Node 0.73.1 | RSS MB pi_core / Node | events pi_core / 1.6.0 / 0.73.1 |",
        "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for row in rows:
        case = row.case
        if case.impl != "pi_core":
            continue
        spec = SPECS[case.scenario]
        floor = index.get(Case("floor", case.scenario, case.n, case.backend))
        node = index.get(Case("node", case.scenario, case.n, "1.6.0"))
        old = index.get(Case("node", case.scenario, case.n, "0.73.1"))
        unit, value = _display(row)
        cells = [
            case.scenario,
            f"{spec.param}={case.n}",
            unit,
            case.backend,
            value,
            _display(floor)[1] if floor else _NONE,
            _times(_ratio(row, floor)),
            _display(node)[1] if node else _NONE,
            _times(_ratio(row, node)),
            _display(old)[1] if old else _NONE,
            f"{_memory(row)} / {_memory(node) if node else _NONE}",
            " / ".join(_events(each) for each in (row, node, old) if each),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _display(row: Row) -> tuple[str, str]:
    scenario = row.case.scenario
    if scenario == "agents":
        return "s (wall)", f"{row.seconds:.3f}"
    return f"µs/{SPECS[scenario].unit}", f"{row.per_unit_us:,.1f}"


def _memory(row: Row) -> str:
    if row.case.scenario == "memory":
        return f"Δ{row.rss_growth_mb:+.1f}"
    return f"{row.rss_mb:.0f}"


def _times(ratio: float | None) -> str:
    return f"{ratio:.2f}{_TIMES}" if ratio is not None else _NONE


def _events(row: Row) -> str:
    if row.too_fast:
        return "✗ faster than its sleeps allow"
    got = "/".join(str(e) for e in row.events)
    return f"{got} ✓" if row.events_ok else f"{got} ✗ (want {expected_events(row.case)})"


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "loadavg": [round(load, 2) for load in os.getloadavg()],
        "cpu": _cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "anyio": version("anyio"),
        "trio": _version_or_none("trio"),
        "pi_core": _version_or_none("pi-agent-core-py"),
        "revision": _revision(),
        "node": node_bridge.node_version(),
        "pi_agent_core": list(node_bridge.VERSIONS),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _revision() -> str | None:
    """The git commit measured, with ``-dirty`` when the work tree has changes."""
    try:
        completed = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return completed.stdout.strip() or None


def _version_or_none(package: str) -> str | None:
    try:
        return version(package)
    except Exception:
        return None


def save(
    info: dict[str, Any], records: Iterable[dict[str, Any]], markdown: str, out: Path, stem: str
) -> list[Path]:
    """Write ``<stem>.json`` (machine + records), ``<stem>.csv`` and ``<stem>.md`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    records = list(records)
    json_path, csv_path, md_path = (out / f"{stem}.{ext}" for ext in ("json", "csv", "md"))
    json_path.write_text(json.dumps({"machine": info, "results": records}, indent=1) + "\n")
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=_csv_fields(records), extrasaction="ignore")
        writer.writeheader()
        for record in records:
            writer.writerow({**record, "params": json.dumps(record["params"])})
    md_path.write_text(markdown + "\n", encoding="utf-8")
    return [json_path, csv_path, md_path]


def _csv_fields(records: Sequence[dict[str, Any]]) -> list[str]:
    fields: dict[str, None] = {}
    for record in records:
        fields.update(dict.fromkeys(record))
    return list(fields)
