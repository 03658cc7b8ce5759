"""A planner that delegates to two researchers in parallel: sub-agents as tools.

Run it:  python examples/planner.py [asyncio|trio]

The planner's one tool, ``research``, runs a fresh researcher Agent inside the tool call. The
planner's model asks for two researches in one reply, so the two children run side by side, each
with its own model and its own ``search`` tool. The planner sees each child's events as they
happen (tagged with the call they belong to), and each child's reply comes back as the call's
result. An abort of the planner would abort both children, which close out their own calls first.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from pi_core import Agent, AgentEvent, SubagentEvent, ToolExecutionUpdate, agent_tool, tool
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

FACTS = {
    "tides": ("the moon's pull", 0.2),
    "seasons": ("the tilt of the earth's axis", 0.1),
}


@tool
async def search(topic: str) -> str:
    """Look a topic up (slowly)."""
    finding, latency = FACTS[topic]
    await anyio.sleep(latency)
    return f"{topic}: caused by {finding}"


def researcher(args: dict[str, Any]) -> Agent:
    """A fresh researcher for one task: it searches once, then reports."""
    topic = args["task"]
    model = FauxProvider()
    model.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("search", {"topic": topic})], stop_reason="toolUse"
            ),
            faux_assistant_message(f"Report on {topic}: {FACTS[topic][0]}."),
        ]
    )
    return Agent(model=model.get_model(), stream_fn=model.stream, tools=[search])


def planner() -> Agent:
    research = agent_tool(researcher, name="research", description="Research one topic.")
    model = FauxProvider()
    calls = [faux_tool_call("research", {"task": topic}, id=topic) for topic in FACTS]
    model.set_responses(
        [
            faux_assistant_message(calls, stop_reason="toolUse"),
            faux_assistant_message("Both reports are in: tides follow the moon, seasons the tilt."),
        ]
    )
    return Agent(model=model.get_model(), stream_fn=model.stream, tools=[research])


async def main() -> None:
    agent = planner()

    def show(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionUpdate):
            forwarded = event.partial_result.details
            if isinstance(forwarded, SubagentEvent) and forwarded.event.type.startswith("tool_"):
                inner = forwarded.event
                print(f"  [{event.tool_call_id}] {inner.type} {inner.tool_name}")  # type: ignore[union-attr]
        elif event.type == "tool_execution_end":
            print(f"[{event.tool_call_id}] research answered: {event.result.content[0].text}")  # type: ignore[union-attr]

    agent.subscribe(show)
    result = await agent.prompt("Why are there tides, and why are there seasons?")
    print("planner:", result.text)


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
