"""bench.instructions: instruction counts per unit of work, under valgrind when it is installed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ sits next to tests/

from bench import instructions

SUMMARY = """\
==123== I refs:        1,234,567,890
"""


def test_reads_the_count_from_cachegrinds_summary() -> None:
    assert instructions.instructions_of("noise\n" + SUMMARY) == 1_234_567_890


def test_no_summary_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no instruction count"):
        instructions.instructions_of("valgrind: command not found")


def test_units_of_work_count_the_warm_up() -> None:
    assert instructions.units_of_work("turns", 200) == 400
    assert instructions.units_of_work("memory", 1000) == 1100  # warm-up at a tenth


def test_a_size_must_exceed_the_smoke_size() -> None:
    with pytest.raises(ValueError, match="smoke size"):
        instructions.count("pi_core", "turns", 3, "asyncio")


def test_the_table_puts_pi_core_beside_its_floor() -> None:
    counts = [
        instructions.Count("pi_core", "turns", 200, "asyncio", 520_000.0),
        instructions.Count("floor", "turns", 200, "asyncio", 400_000.0),
    ]
    table = instructions.table(counts)
    assert (
        "| turns | T=200 | turn | asyncio | 520.0 | 400.0 | 1.30\N{MULTIPLICATION SIGN} |" in table
    )


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_a_tiny_case_under_valgrind() -> None:
    # Beside the other tests' processes a single count has once come out a whole start-up too high.
    result = instructions.count("floor", "streaming", 200, "asyncio", repeats=2)
    # An async generator step with a checkpoint: thousands of instructions, not millions.
    assert 1_000 < result.per_unit < 1_000_000
