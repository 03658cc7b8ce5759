"""A durable agent: its runs survive the worker process and can be driven from anywhere.

    python examples/durable_worker.py                       # a worker and a client, one process
    python examples/durable_worker.py serve DB_URL ID       # only a worker (kill it, restart it)

With no arguments the script opens a worker on a SQLite file in a temporary directory, starts a
run from a client, prints its events as they are recorded and its result. With ``serve`` it only
serves: start runs with ``pi-core runs start calculator "..." --db DB_URL`` from another shell,
kill the worker in the middle of a run (even with SIGKILL), start it again with the same ID and
watch the run finish. The model is scripted (no network, no key): its first reply asks for the
tool, its second reads the tool's result.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from pi_core import AssistantMessage, Context, Model, StreamOptions, ToolResultMessage, tool
from pi_core.durable import AgentSpec, DurableAgents, DurableRuns, open_worker
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

agents = DurableAgents()


@tool
async def multiply(a: float, b: float) -> str:
    """Multiply two numbers (slowly, as a real tool might)."""
    await anyio.sleep(0.5)
    return str(a * b)


def reply(
    context: Context, options: StreamOptions, call_count: int, model: Model
) -> AssistantMessage:
    """The scripted model: a function of the context, so a recovered run sees the same model."""
    results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    if not results:
        return faux_assistant_message(
            faux_tool_call("multiply", {"a": 6, "b": 7}, id="call-1"), stop_reason="toolUse"
        )
    return faux_assistant_message(f"6 times 7 is {results[-1].content[0].text}.")  # type: ignore[union-attr]


@agents.define("calculator")
def calculator(params: dict[str, Any]) -> AgentSpec:
    """Called by the worker for each run (and again when a run is recovered)."""
    provider = FauxProvider()
    provider.set_responses([reply] * 100)
    model = provider.get_model()
    assert model is not None
    return AgentSpec(
        model=model,
        stream_fn=provider.stream,
        tools=[multiply],
        system_prompt="You are a careful calculator.",
    )


async def serve(database_url: str, executor_id: str) -> None:
    async with open_worker(agents, database_url, executor_id=executor_id, app_version="1"):
        print(f"worker {executor_id} serving {database_url}", flush=True)
        await anyio.sleep_forever()


async def demo() -> None:
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'runs.sqlite'}"
        async with (
            open_worker(agents, url, executor_id="demo-worker", app_version="1"),
            DurableRuns(url) as runs,
        ):
            run_id = await runs.start("calculator", "What is 6 times 7?")
            async for offset, event in runs.events(run_id):
                print(f"[{offset}] {event.type}")
            messages = await runs.result(run_id)
            print(f"[result] {messages[-1].content[0].text}")  # type: ignore[union-attr]
            print(f"[status] {(await runs.status(run_id)).state}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        anyio.run(serve, sys.argv[2], sys.argv[3], backend="asyncio")
    else:
        anyio.run(demo, backend="asyncio")  # DBOS workflows run on asyncio
