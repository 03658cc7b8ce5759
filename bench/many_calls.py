"""``python -m bench.many_calls``: one reply of thousands of tool calls, through an Agent.

A model that loops, or a hostile one, can make tens of thousands of tool calls in one reply.
Every call must cost the same however many came before it, the run must keep yielding to the
event loop, and an abort from another task must be heard promptly. Per size this prints the CPU
seconds of the run, the microseconds per call (flat when the work is linear), the longest stall
(the most CPU time the run spent between two wake-ups of a watcher task that sleeps 5 ms), and,
in a second run, the CPU time from an abort sent by another task at the first
``tool_execution_start`` to the end of the run. CPU time rather than wall time: on a shared
machine the wall time of a stall is mostly other processes' work.

    python -m bench.many_calls                  # 5 000, 20 000 and 100 000 calls, asyncio
    python -m bench.many_calls --size 20000 --backend trio

The limit of calls per reply is lifted (``max_tool_calls_per_reply=None``) so that every call
runs. JSON lines go to stdout, then a Markdown table.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel

from pi_core import Agent, AgentEvent, AssistantMessageEvent, Context, Model, StreamOptions

from .report import field, param, print_report, sizes_and_backends, sweep
from .scenarios import MODEL, NOOP_TOOL, Reply, convert_to_llm, text_reply, tool_reply

__all__ = ["main", "measure"]

DEFAULT_SIZES = (5_000, 20_000, 100_000)
WATCH_INTERVAL = 0.005
"""Seconds the watcher sleeps between its wake-ups."""


class NetworkPaced:
    """Replays scripted replies with a checkpoint every 64 events, as reads from a network
    would: the reply's own stream does not stall the loop, so what stalls it is the run's."""

    __slots__ = ("_replies",)

    def __init__(self, replies: list[Reply]) -> None:
        self._replies = iter(replies)

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._replay(next(self._replies))

    @staticmethod
    async def _replay(reply: Reply) -> AsyncIterator[AssistantMessageEvent]:
        for index, event in enumerate(reply):
            if index % 64 == 63:
                await anyio.lowlevel.checkpoint()
            yield event


def _agent(calls: int) -> Agent:
    return Agent(
        model=MODEL,
        tools=[NOOP_TOOL],
        stream_fn=NetworkPaced([tool_reply("noop", calls), text_reply()]),
        convert_to_llm=convert_to_llm,
        max_tool_calls_per_reply=None,
    )


async def _run(calls: int, abort: bool) -> tuple[float, float]:
    """One run; returns the longest stall and the CPU seconds from the abort to the run's end."""
    agent = _agent(calls)
    first_start = anyio.Event()

    def listen(event: AgentEvent) -> None:
        if event.type == "tool_execution_start":
            first_start.set()

    agent.subscribe(listen)
    longest = 0.0
    aborted_at = 0.0
    running = True

    async def watch() -> None:
        nonlocal longest
        last = time.process_time()
        while running:
            await anyio.sleep(WATCH_INTERVAL)
            now = time.process_time()
            longest = max(longest, now - last)
            last = now

    async def abort_at_first_start() -> None:
        nonlocal aborted_at
        await first_start.wait()
        aborted_at = time.process_time()
        agent.abort()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        if abort:
            tg.start_soon(abort_at_first_start)
        await agent.prompt("go")
        running = False
    return longest, (time.process_time() - aborted_at if abort else 0.0)


def measure(calls: int, backend: str) -> dict[str, object]:
    """A whole run of ``calls`` calls, then one aborted at its first call."""
    start = time.process_time()
    stall, _ = anyio.run(_run, calls, False, backend=backend)
    seconds = time.process_time() - start
    _, abort_s = anyio.run(_run, calls, True, backend=backend)
    return {
        "scenario": "many_calls",
        "params": {"N": calls, "backend": backend},
        "seconds": round(seconds, 3),
        "per_unit_us": round(seconds / calls * 1e6, 1),
        "longest_stall_s": round(stall, 3),
        "abort_s": round(abort_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = sizes_and_backends("python -m bench.many_calls", "tool calls in the reply")
    args = parser.parse_args(argv)
    columns = [
        ("backend", param("backend")),
        ("calls", param("N", ",")),
        ("CPU seconds", field("seconds")),
        ("µs per call", field("per_unit_us")),
        ("longest stall (CPU s)", field("longest_stall_s")),
        ("abort (CPU s)", field("abort_s")),
    ]
    print_report(sweep(args, measure, DEFAULT_SIZES), columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
