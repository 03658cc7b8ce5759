"""``python -m bench.peers``: pi_core next to pydantic-ai and openai-agents on the turns scenario.

    python -m bench.peers                     every case at T=200, each in its own process
    python -m bench.peers --turns 500 --repeat 2
    python -m bench.peers --case pi_core --case openai-agents/run

JSON lines go to stdout, then the machine and a Markdown table; progress goes to stderr. The
results are also written to bench/results/peers.{json,csv,md}. The exit status is 1 if a case
failed, was not installed, or a run did not follow the script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import runner
from ..scenarios import SPECS
from .case import BY_KEY, PEERS, Peer

REFERENCE = "pi_core"
_TIMES = "\N{MULTIPLICATION SIGN}"
_NONE = "\N{EN DASH}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    peers = [BY_KEY[key] for key in args.case] if args.case else list(PEERS)
    info = runner.machine()  # the revision measured is the one at the start
    samples = _run_all(peers, args.turns, args.rounds, args.min_time, args.repeat)
    info["loadavg"] = [round(load, 2) for load in os.getloadavg()]

    records = _records(peers, samples, args.turns)
    for record in records:
        print(json.dumps(record, ensure_ascii=False))
    markdown = _machine_line(info, args.turns) + "\n\n" + table(records)
    print("\n" + markdown)
    written = runner.save(info, records, markdown, args.out, "peers")
    print("\nwritten: " + ", ".join(str(path) for path in written), file=sys.stderr)
    missing = [peer.key for peer in peers if peer.key not in samples]
    for key in missing:
        print(f"bench.peers: no result for {key}", file=sys.stderr)
    return 1 if missing else 0


def _run_all(
    peers: list[Peer], turns: int, rounds: int, min_time: float, repeat: int
) -> dict[str, list[dict[str, Any]]]:
    """Run every case ``repeat`` times, interleaved, so that drifts of the machine hit all alike."""
    samples: dict[str, list[dict[str, Any]]] = {}
    total = len(peers) * repeat
    for round_ in range(repeat):
        for index, peer in enumerate(peers, start=1):
            _progress(f"[{round_ * len(peers) + index}/{total}] {peer.key} T={turns}")
            try:
                samples.setdefault(peer.key, []).append(_run_case(peer, turns, rounds, min_time))
            except (RuntimeError, subprocess.SubprocessError, ValueError) as exc:
                _progress(f"  failed: {exc}")
    # A case that failed in any process is not reported: its other figures may be wrong too.
    return {key: results for key, results in samples.items() if len(results) == repeat}


def _run_case(peer: Peer, turns: int, rounds: int, min_time: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.peers.case", peer.key, "--turns", str(turns)]
    command += ["--rounds", str(rounds), "--min-time", str(min_time)]
    completed = subprocess.run(
        command, cwd=runner.REPO, capture_output=True, text=True, check=False, timeout=1800
    )
    if completed.returncode != 0:
        raise RuntimeError((completed.stdout + completed.stderr).strip()[-800:])
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _records(
    peers: list[Peer], samples: dict[str, list[dict[str, Any]]], turns: int
) -> list[dict[str, Any]]:
    """One record per case: medians over every round of every process, and the ratio to pi_core."""
    records = [_record(peer, samples[peer.key], turns) for peer in peers if peer.key in samples]
    reference = next((r["per_turn_us"] for r in records if r["case"] == REFERENCE), None)
    for record in records:
        ratio = record["per_turn_us"] / reference if reference else None
        record["vs_pi_core"] = round(ratio, 1) if ratio is not None else None
    return records


def _record(peer: Peer, results: list[dict[str, Any]], turns: int) -> dict[str, Any]:
    seconds = [s for result in results for s in result["seconds"]]
    median = statistics.median(seconds)
    return {
        "case": peer.key,
        "framework": peer.framework,
        "version": results[0]["version"],
        "mode": peer.mode,
        "backend": results[0]["backend"],
        "params": {"T": turns},
        "seconds": round(median, 6),
        "seconds_min": round(min(seconds), 6),
        "per_turn_us": round(SPECS["turns"].per_unit_us(median, turns), 1),
        "rounds": len(seconds),
        "checked": f"{results[0]['expected']} {results[0]['checked']} per run",
        "rss_mb": round(statistics.median(result["rss_mb"] for result in results), 2),
    }


def table(records: list[dict[str, Any]]) -> str:
    """A Markdown table: framework, version, mode, µs per turn, and the ratio to pi_core."""
    lines = [
        f"| framework | version | mode | µs/turn | {_TIMES} pi_core | checked |",
        "|---|---|---|--:|--:|---|",
    ]
    for record in records:
        ratio = record["vs_pi_core"]
        cells = [
            record["framework"],
            record["version"],
            record["mode"],
            f"{record['per_turn_us']:,.0f}",
            f"{ratio:,.1f}{_TIMES}" if ratio is not None else _NONE,
            f"{record['checked']} ✓",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _machine_line(info: dict[str, Any], turns: int) -> str:
    return (
        f"{info['date']} · turns T={turns} · pi_core {info['revision']} · nproc {info['nproc']} "
        f"· {info['cpu']} · Python {info['python']} (anyio {info['anyio']}) "
        f"· load average at the end {info['loadavg']}"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--turns", type=int, default=200, help="T, the turns of one run (default 200)")
    add("--case", action="append", choices=sorted(BY_KEY), help="repeatable; default: all")
    add("--rounds", type=int, default=5, help="timed rounds per process, at least (default 5)")
    add("--min-time", type=float, default=1.0, help="more rounds until this many seconds")
    add("--repeat", type=int, default=1, help="processes per case, interleaved (default 1)")
    add("--out", type=Path, default=runner.RESULTS, help="results directory")
    return parser


if __name__ == "__main__":
    sys.exit(main())
