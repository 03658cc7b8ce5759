"""``python -m bench.output_validation``: reading a typed answer of many fields.

A typed answer is the output tool's arguments, coerced and validated as any tool's arguments,
then structured into the output type. This builds an attrs class of ``--fields`` fields (strings,
integers, numbers, booleans and lists of strings, in turn), has the model "send" a valid value as
JSON, a third of it in the loose forms models write (numbers as strings, ``"TRUE"``), and prints
the microseconds one read takes (the best of several rounds).

    python -m bench.output_validation               # 100 fields
    python -m bench.output_validation --fields 400

One JSON line goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import attrs

from pi_core import ToolCall
from pi_core._output import OUTPUT_TOOL, OutputSpec

__all__ = ["answer_of", "main", "output_class", "read_once"]

_KINDS: list[tuple[type, Any, Any]] = [
    (str, "text", "text"),
    (int, 42, "42"),
    (float, 2.5, "2.5"),
    (bool, True, "TRUE"),
    (list[str], ["a", "b"], "a"),
]


def output_class(fields: int) -> type:
    """An attrs class with ``fields`` fields of the kinds above, in turn."""
    names = {f"f{i}": attrs.field(type=_KINDS[i % len(_KINDS)][0]) for i in range(fields)}
    return attrs.make_class("Answer", names, frozen=True)


def answer_of(fields: int) -> dict[str, Any]:
    """The arguments a model sends: every third field in its loose form."""
    return {f"f{i}": _KINDS[i % len(_KINDS)][2 if i % 3 == 0 else 1] for i in range(fields)}


def read_once(spec: OutputSpec, call: ToolCall) -> Any:
    return spec.read(call)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.output_validation")
    parser.add_argument("--fields", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args(argv)
    spec = OutputSpec.of(output_class(args.fields))
    assert spec is not None
    call = ToolCall(id="o1", name=OUTPUT_TOOL, arguments=answer_of(args.fields))
    read_once(spec, call)  # the first read compiles the schema: not what is measured
    best = min(_timed(spec, call) for _ in range(args.rounds))
    print(json.dumps({"scenario": "output_validation", "fields": args.fields, "us": best * 1e6}))


def _timed(spec: OutputSpec, call: ToolCall) -> float:
    start = time.perf_counter()
    read_once(spec, call)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
