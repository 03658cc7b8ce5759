"""Parallel tool calls: they run at once, end in completion order, and report in source order.

Run it:  python examples/parallel_tools.py [asyncio|trio]

The faux model asks for four lookups in one reply. In parallel mode they run as children of one
task group: ``tool_execution_end`` events arrive as each call finishes, while the toolResult
messages (what the model reads next) keep the order of the calls. The same batch then runs
sequentially, to compare the wall time. (``Agent(max_parallel_tools=n)`` caps how many calls of
a batch run at once.)
"""

from __future__ import annotations

import sys
import time
from typing import Any, Literal

import anyio

from pi_core import AbortSignal, Agent, AgentEvent, tool
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

LATENCY = {"slow": 0.3, "medium": 0.2, "fast": 0.1, "instant": 0.0}


@tool
async def lookup(name: Literal["slow", "medium", "fast", "instant"]) -> str:
    """Look something up; some things take longer than others."""
    await anyio.sleep(LATENCY[name])
    return f"{name} is ready"


def scripted_model() -> FauxProvider:
    faux = FauxProvider()
    calls = [faux_tool_call("lookup", {"name": name}, id=name) for name in LATENCY]
    faux.set_responses(
        [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("All done.")]
    )
    return faux


async def run_batch(**options: Any) -> tuple[list[str], list[str], float]:
    """Run the batch; return the completion order, the result order and the wall time."""
    faux = scripted_model()
    agent = Agent(model=faux.get_model(), stream_fn=faux.stream, tools=[lookup], **options)
    completed: list[str] = []
    reported: list[str] = []

    def record(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "tool_execution_end":
            completed.append(event.tool_call_id)
        elif event.type == "turn_end" and event.tool_results:
            reported.extend(result.tool_call_id for result in event.tool_results)

    agent.subscribe(record)
    started = time.perf_counter()
    await agent.prompt("Look everything up.")
    return completed, reported, time.perf_counter() - started


async def main() -> None:
    completed, reported, seconds = await run_batch()
    print("source order:     ", ", ".join(LATENCY))
    print("completion order: ", ", ".join(completed))
    print("result order:     ", ", ".join(reported))
    print(f"parallel:   {seconds:.2f} s")
    *_, seconds = await run_batch(tool_execution="sequential")
    print(f"sequential: {seconds:.2f} s")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
