"""A durable agent that delegates to a sub-agent, every model call and tool call counted in a file.

``delegating`` asks its ``research`` sub-agent for one task, then answers. The child calls
``slow`` once, then answers. ``slow`` writes its line and then, in a process started with
``STALL_SLOW=1`` and on its first call, waits forever: the test's cue to kill that worker while
the child runs. Each model plans its reply from the conversation, so a replayed run asks for the
same replies whichever process makes the calls.

Serve it with ``pi-core worker durable._subagent_agents:agents`` (tests/ on PYTHONPATH).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio

from durable._counting_agents import STALL_ENV, count
from pi_core import (
    Agent,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    agent_tool,
    tool,
)
from pi_core.durable import AgentSpec, DurableAgents
from pi_core.testing import ScriptedStream, scripted_reply

ANSWER = "the researcher reported back"
CHILD_ANSWER = "research done"

agents = DurableAgents()

Planner = Callable[[list[Any]], AssistantMessage]


def counted_stream(directory: Path, name: str, plan: Planner) -> Any:
    """A stream function that counts its calls in ``directory/name`` and replies by ``plan``."""

    def stream(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        count(directory, name)
        return ScriptedStream([plan(list(context.messages))])(model, context, options)

    return stream


def answered(messages: list[Any], tool_name: str) -> bool:
    return any(isinstance(m, ToolResultMessage) and m.tool_name == tool_name for m in messages)


def parent_plan(messages: list[Any]) -> AssistantMessage:
    if not answered(messages, "research"):
        return scripted_reply(ToolCall("research-1", "research", {"task": "look into it"}))
    return scripted_reply(ANSWER)


def child_plan(messages: list[Any]) -> AssistantMessage:
    if not answered(messages, "slow"):
        return scripted_reply(ToolCall("slow-1", "slow", {}))
    return scripted_reply(CHILD_ANSWER)


def researcher(directory: Path) -> Callable[[dict[str, Any]], Agent]:
    @tool
    async def slow() -> str:
        """Take a while."""
        if count(directory, "slow") == 1 and os.environ.get(STALL_ENV) == "1":
            await anyio.sleep_forever()
        return "slow step done"

    def make(_args: dict[str, Any]) -> Agent:
        stream = counted_stream(directory, "child-model", child_plan)
        return Agent(model=ScriptedStream().model, stream_fn=stream, tools=[slow])

    return make


@agents.define("delegating")
def delegating(params: dict[str, Any]) -> AgentSpec:
    directory = Path(params["dir"])
    research = agent_tool(researcher(directory), name="research", description="Research a task.")
    return AgentSpec(
        model=ScriptedStream().model,
        stream_fn=counted_stream(directory, "model", parent_plan),
        tools=[research],
    )
