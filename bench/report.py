"""What the CPU-time scripts of bench/ share: their ``--size`` / ``--backend`` options, and the
report, each row printed as a JSON line as soon as it is measured, then all rows as one
Markdown table."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = ["Column", "field", "param", "print_report", "sizes_and_backends", "sweep"]

Row = dict[str, Any]
Column = tuple[str, Callable[[Row], object]]
"""A table column: its header and what its cell shows of a row (the first column is text, the
others are numbers, aligned right)."""


def sizes_and_backends(prog: str, size_help: str) -> argparse.ArgumentParser:
    """A parser taking ``--size N`` and ``--backend asyncio|trio``, each repeatable."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--size", type=int, action="append", help=size_help)
    parser.add_argument("--backend", action="append", choices=("asyncio", "trio"))
    return parser


def sweep(
    args: argparse.Namespace, measure: Callable[[int, str], Row], default_sizes: Iterable[int]
) -> Iterator[Row]:
    """``measure(size, backend)`` for each backend and size that ``args`` ask for (asyncio and
    ``default_sizes`` when they ask for none), one at a time."""
    for backend in args.backend or ("asyncio",):
        for size in args.size or default_sizes:
            yield measure(size, backend)


def print_report(rows: Iterable[Row], columns: Sequence[Column]) -> list[Row]:
    """Print each row as a JSON line while ``rows`` yields them, then the table; return them."""
    measured = []
    for row in rows:
        print(json.dumps(row), flush=True)
        measured.append(row)
    headers = [header for header, _ in columns]
    print("\n| " + " | ".join(headers) + " |")
    print("|---|" + "--:|" * (len(columns) - 1))
    for row in measured:
        print("| " + " | ".join(str(cell(row)) for _, cell in columns) + " |")
    return measured


def param(name: str, spec: str = "") -> Callable[[Row], str]:
    """A cell showing ``row["params"][name]``, formatted with ``spec`` (``","`` for thousands)."""
    return lambda row: format(row["params"][name], spec)


def field(name: str, spec: str = "") -> Callable[[Row], str]:
    """A cell showing ``row[name]``, formatted with ``spec``."""
    return lambda row: format(row[name], spec)
