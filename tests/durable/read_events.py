"""``python read_events.py DB_URL RUN_ID``: print a run's events as ``offset type`` lines, live."""

from __future__ import annotations

import sys

import anyio

from pi_core.durable import DurableRuns


async def main(database_url: str, run_id: str) -> None:
    async with DurableRuns(database_url) as runs:
        async for offset, event in runs.events(run_id):
            print(offset, event.type, flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], backend="asyncio")
