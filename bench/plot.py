"""How cost grows with turns, parallel tools, deltas and concurrent agents (needs matplotlib)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .runner import Row
from .scenarios import SPECS

__all__ = ["plot_growth"]

_PANELS = ("turns", "fanout", "streaming", "agents")
_SERIES = (
    ("pi_core", "asyncio", "tab:blue", "-"),
    ("pi_core", "trio", "tab:orange", "-"),
    ("floor", "asyncio", "tab:blue", ":"),
    ("floor", "trio", "tab:orange", ":"),
    ("node", "1.6.0", "tab:green", "--"),
    ("node", "0.73.1", "tab:olive", "-."),
)


def plot_growth(rows: Sequence[Row], path: Path) -> Path | None:
    """Draw cost against size, one panel per scenario; ``None`` without matplotlib.

    The cost is µs per unit, except for agents: the wall time of the whole run.
    """
    try:
        matplotlib: Any = importlib.import_module("matplotlib")
    except ImportError:
        return None
    matplotlib.use("Agg")
    plt: Any = importlib.import_module("matplotlib.pyplot")
    panels = [name for name in _PANELS if any(row.case.scenario == name for row in rows)]
    if not panels:
        return None
    figure, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for axis, scenario in zip(axes[0], panels, strict=True):
        spec = SPECS[scenario]
        for impl, backend, color, style in _SERIES:
            points = sorted(
                (row.case.n, row.seconds if scenario == "agents" else row.per_unit_us)
                for row in rows
                if row.case.scenario == scenario
                and row.case.impl == impl
                and row.case.backend == backend
            )
            if points:
                sizes, costs = zip(*points, strict=True)
                label = f"{impl} {backend}"
                axis.plot(sizes, costs, style, color=color, marker="o", label=label)
        axis.set_xscale("log")
        sizes_shown = sorted({row.case.n for row in rows if row.case.scenario == scenario})
        axis.set_xticks(sizes_shown, [f"{size:,}" for size in sizes_shown])
        axis.minorticks_off()
        axis.set_title(scenario)
        axis.set_xlabel(spec.param)
        axis.set_ylabel("seconds (wall)" if scenario == "agents" else f"µs per {spec.unit}")
        axis.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
