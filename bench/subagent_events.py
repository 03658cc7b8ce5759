"""``python -m bench.subagent_events``: what forwarding a sub-agent's events to its parent costs.

A child Agent streams a reply of ``D`` text deltas (one ``message_update`` event each). The same
child runs twice: on its own, with one listener counting its events; and inside a parent's tool
call through ``agent_tool``, which forwards each event to the parent's listeners as a
``tool_execution_update``. The difference in CPU time, divided by the events forwarded, is the
cost of forwarding one event (the parent's own turn, a few dozen events, is in it too).

    python -m bench.subagent_events                    # 10k, 50k and 100k deltas on asyncio
    python -m bench.subagent_events --size 20000 --backend trio

JSON lines go to stdout, then a Markdown table.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import anyio

from pi_core import Agent, AgentEvent, agent_tool
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

from .report import field, param, print_report, sizes_and_backends, sweep
from .scenarios import DeltaStream

__all__ = ["main", "measure"]

DEFAULT_SIZES = (10_000, 50_000, 100_000)


def _child(deltas: int) -> Agent:
    return Agent(model=FauxProvider().get_model(), stream_fn=DeltaStream(deltas))


async def _alone(deltas: int) -> int:
    child = _child(deltas)
    seen = [0]

    def count(_event: AgentEvent) -> None:
        seen[0] += 1

    child.subscribe(count)
    await child.prompt("go")
    return seen[0]


async def _forwarded(deltas: int) -> int:
    def make(_args: dict[str, Any]) -> Agent:
        return _child(deltas)

    model = FauxProvider()
    call = faux_tool_call("child", {"task": "go"}, id="c1")
    model.set_responses(
        [faux_assistant_message([call], stop_reason="toolUse"), faux_assistant_message("done")]
    )
    tool = agent_tool(make, name="child", description="A child that streams.")
    parent = Agent(model=model.get_model(), stream_fn=model.stream, tools=[tool])
    seen = [0]

    def count(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            seen[0] += 1

    parent.subscribe(count)
    await parent.prompt("go")
    return seen[0]


def _cpu(run: Any, deltas: int, backend: str) -> tuple[float, int]:
    start = time.process_time()
    events = anyio.run(run, deltas, backend=backend)
    return time.process_time() - start, events


def measure(deltas: int, backend: str) -> dict[str, object]:
    """The child alone and forwarded, on ``backend``; µs of forwarding per event."""
    alone, events = _cpu(_alone, deltas, backend)
    forwarded, updates = _cpu(_forwarded, deltas, backend)
    assert updates == events, "every event of the child reaches the parent"
    return {
        "scenario": "subagent_events",
        "params": {"D": deltas, "backend": backend, "events": events},
        "alone_seconds": round(alone, 3),
        "forwarded_seconds": round(forwarded, 3),
        "per_unit_us": round((forwarded - alone) / events * 1e6, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = sizes_and_backends("python -m bench.subagent_events", "deltas in the child's reply")
    args = parser.parse_args(argv)
    columns = [
        ("backend", param("backend")),
        ("events", param("events", ",")),
        ("alone, CPU s", field("alone_seconds")),
        ("forwarded, CPU s", field("forwarded_seconds")),
        ("µs per forwarded event", field("per_unit_us")),
    ]
    print_report(sweep(args, measure, DEFAULT_SIZES), columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
