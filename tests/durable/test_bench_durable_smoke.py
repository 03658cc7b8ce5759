"""``python -m bench.durable`` runs its measurements end to end, at the smallest size.

No timing is asserted: the figures belong in docs/performance.md. Each measurement runs in a
subprocess (on asyncio, as the durable engine requires), so the test needs no event-loop backend.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/ sits next to tests/

from bench.durable import __main__ as bench_main

SHAPE_OPERATIONS = 7  # 3 model steps and 4 tool steps, at the least


def test_each_measurement_runs_in_its_own_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cpu.sqlite'}"
    cpu = bench_main._run_phase("cpu", url, 1)
    assert cpu["operations_per_run"] >= SHAPE_OPERATIONS
    assert cpu["durable_cpu_ms_per_run"] > 0 and cpu["bare_cpu_ms_per_run"] > 0
    workers = bench_main._run_phase("workers-1", f"sqlite:///{tmp_path / 'w.sqlite'}", 2)
    assert workers["workers"] == 1 and workers["runs"] == 2
    table = bench_main._table(
        [
            {"db": "sqlite", "phase": "cpu", **cpu},
            {"db": "sqlite", "phase": "workers-1", **workers},
            {"db": "sqlite", "phase": "workers-2", **workers},
        ]
    )
    assert table.splitlines()[2].startswith(f"| sqlite | {cpu['operations_per_run']} |")
