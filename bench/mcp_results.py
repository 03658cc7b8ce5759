"""``python -m bench.mcp_results``: the client's CPU time for one large MCP tool result.

A real MCP server (tests/mcp/hostile_mcp_server.py, over stdio) answers one ``tools/call`` with
a text result of N MiB; printed per size: this process's CPU seconds from the request to the
result (reading the line, parsing it, turning it into the tool's result) and the result's size
as the tool returned it. The server's own CPU is not counted (it is another process). The result
cap is lifted (``max_result_bytes=None``) unless ``--cap`` gives one, so that the reader itself is
measured.

    python -m bench.mcp_results                       # 10, 25 and 50 MiB, on asyncio
    python -m bench.mcp_results --sizes 10 --backend trio --cap 16
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from pi_core import AbortSignal, TextContent
from pi_core.mcp import StdioServer, mcp_tools

__all__ = ["main", "measure"]

MIB = 1024 * 1024
SERVER = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "hostile_mcp_server.py"


async def measure(size_mib: float, cap_mib: float | None) -> tuple[float, int]:
    """CPU seconds of one call returning ``size_mib`` MiB, and the length of its text."""
    size = int(size_mib * MIB)
    wanted: dict[str, Any] = {
        "call_timeout": None,
        "max_result_bytes": None if cap_mib is None else int(cap_mib * MIB),
    }
    known = inspect.signature(mcp_tools).parameters  # older versions lack these options
    options = {key: value for key, value in wanted.items() if key in known}
    server = StdioServer(sys.executable, [str(SERVER), "huge", str(size)])
    async with mcp_tools(server, include=["hostile"], **options) as [tool]:
        start = time.process_time()
        try:
            result = await tool.execute("bench", {"text": ""}, AbortSignal(), lambda _: None)
        except Exception as exc:  # the cap's error: its text is the outcome
            text = str(exc)
        else:
            [block] = result.content
            text = block.text if isinstance(block, TextContent) else ""
        return time.process_time() - start, len(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[10, 25, 50], metavar="MIB")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--cap", type=float, default=None, metavar="MIB")
    args = parser.parse_args()
    for size in args.sizes:
        cpu, length = anyio.run(measure, size, args.cap, backend=args.backend)
        print(f"{size:g} MiB: {cpu:.2f} s CPU, result text {length:,} characters", flush=True)


if __name__ == "__main__":
    main()
