"""``python -m bench.tool_args``: streaming a tool call's large arguments in small fragments.

A model that writes a file through a tool sends hundreds of KiB of JSON arguments, a few
characters per delta. Each delta updates the call's ``arguments`` as far as they can be read,
both where a provider builds the reply (``PartialMessage.add_tool_json``) and where the proxy
client rebuilds it (``WireDecoder``). Re-parsing everything on every delta makes the work grow with
the square of the size; this prints, per size, the seconds for the whole call and the
microseconds per KiB, which stay flat when the work is linear.

    python -m bench.tool_args                   # 64, 128, 256 and 512 KiB in 4-character deltas
    python -m bench.tool_args --size 1024 --delta 16

JSON lines go to stdout, then a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from pi_core import Model
from pi_core.providers._partial import PartialMessage
from pi_core.proxy._decode import WireDecoder

from .report import field, param, print_report

__all__ = ["arguments_text", "main", "through_decoder", "through_partial"]

DEFAULT_SIZES_KIB = (64, 128, 256, 512)
MODEL = Model("m", api="bench", provider="bench")


def arguments_text(kib: int) -> str:
    """The JSON arguments of a ``write_file`` call whose content is about ``kib`` KiB."""
    line = 'print("hello, world")  # a line of the file\n'
    content = line * (kib * 1024 // len(line) + 1)
    return json.dumps({"path": "src/generated.py", "content": content[: kib * 1024]})


def fragments_of(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def through_partial(fragments: list[str]) -> int:
    """Stream the fragments into a provider's partial message; return the content's length."""
    partial = PartialMessage(MODEL)
    partial.start()
    index = partial.begin_tool_call("call-1", "write_file").content_index
    for fragment in fragments:
        partial.add_tool_json(index, fragment)
    partial.end_block(index)
    return len(partial.tool_call(index).arguments["content"])


def through_decoder(fragments: list[str]) -> int:
    """Feed the fragments to the proxy client's decoder as wire lines; return the length."""
    decoder = WireDecoder(MODEL)
    lines = [
        {"type": "start"},
        {"type": "toolcall_start", "contentIndex": 0, "id": "call-1", "toolName": "write_file"},
        *({"type": "toolcall_delta", "contentIndex": 0, "delta": f} for f in fragments),
        {"type": "toolcall_end", "contentIndex": 0},
    ]
    for line in lines:
        for _ in decoder.feed(b"data: " + json.dumps(line).encode() + b"\n\n"):
            pass
    arguments = decoder.partial.content[0].arguments  # type: ignore[union-attr]
    return len(arguments["content"])


PATHS: dict[str, Callable[[list[str]], int]] = {
    "partial": through_partial,
    "decoder": through_decoder,
}


def measure(path: str, kib: int, delta: int) -> dict[str, object]:
    """One timed call through ``path``: ``kib`` KiB of arguments in ``delta``-character deltas."""
    text = arguments_text(kib)
    fragments = fragments_of(text, delta)
    start = time.perf_counter()
    length = PATHS[path](fragments)
    seconds = time.perf_counter() - start
    assert length == kib * 1024, "the final arguments must hold the whole content"
    return {
        "scenario": "tool_args",
        "params": {"path": path, "kib": kib, "delta": delta, "deltas": len(fragments)},
        "seconds": round(seconds, 4),
        "per_unit_us": round(seconds / kib * 1e6, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tool_args")
    parser.add_argument("--size", type=int, action="append", help="KiB of arguments")
    parser.add_argument("--delta", type=int, default=4, help="characters per delta")
    args = parser.parse_args(argv)
    rows = (
        measure(path, kib, args.delta) for path in PATHS for kib in args.size or DEFAULT_SIZES_KIB
    )
    columns = [
        ("path", param("path")),
        ("KiB", param("kib")),
        ("deltas", param("deltas", ",")),
        ("seconds", field("seconds")),
        ("µs per KiB", field("per_unit_us", ",")),
    ]
    print_report(rows, columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
