"""The benchmark's durable agent: the shape of a short real run, with an instant model.

``shaped`` runs ``TOOL_TURNS`` turns of ``CALLS`` parallel calls to a no-op tool, then a text
reply: 3 model steps and 4 tool steps. Serve it with
``pi-core worker bench.durable.agents:agents``.
"""

from __future__ import annotations

from typing import Any

from pi_core import AgentContext, AgentLoopConfig, AgentMessage, UserMessage, run_agent_loop
from pi_core.durable import AgentSpec, DurableAgents

from ..scenarios import MODEL, NOOP_TOOL, Scripted, convert_to_llm, text_reply, tool_reply

TOOL_TURNS = 2
CALLS = 2
AGENT = "shaped"

agents = DurableAgents()


def _replies() -> Scripted:
    return Scripted([tool_reply("noop", CALLS)] * TOOL_TURNS + [text_reply()])


@agents.define(AGENT)
def shaped(params: dict[str, Any]) -> AgentSpec:
    return AgentSpec(
        model=MODEL, stream_fn=_replies(), tools=[NOOP_TOOL], convert_to_llm=convert_to_llm
    )


async def in_process_run(prompt: str) -> list[AgentMessage]:
    """The same run without durability: the ordinary loop, in this process."""
    config = AgentLoopConfig(MODEL, stream_fn=_replies(), convert_to_llm=convert_to_llm)

    async def emit(event: Any) -> None:
        return None

    return await run_agent_loop(
        [UserMessage(prompt)], AgentContext(tools=[NOOP_TOOL]), config, emit
    )
