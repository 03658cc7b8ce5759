"""Agents for the worker processes of the tests: every model call and tool call is counted in a file.

``counting`` runs three turns: two ``mark`` calls in parallel, then one ``slow`` call, then a text
answer. Its model plans each reply from the conversation (not from a call count), so a replayed
run asks for the same reply whichever process makes the call. The factory's ``dir`` param names
the directory of the count files: ``model``, ``mark-a``, ``mark-b`` and ``slow`` get one line per
call, so the test can tell what ran twice after a worker was killed.

``slow`` writes its line and then, in a process started with ``STALL_SLOW=1`` and on its first
call of the run, waits forever: the test's cue to kill that worker mid-call.

Serve it with ``pi-core worker durable._counting_agents:agents`` (tests/ on PYTHONPATH).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from durable.durable_agents import lines, note
from pi_core import (
    AgentTool,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    tool,
)
from pi_core.durable import AgentSpec, DurableAgents
from pi_core.testing import ScriptedStream, scripted_reply

STALL_ENV = "STALL_SLOW"
ANSWER = "both marks are set and the slow step is done"
MARKS = ("a", "b")

agents = DurableAgents()


def count(directory: Path, name: str) -> int:
    """Note one call in ``directory/name``; return how many it has now."""
    note(str(directory), name, "x")
    return len(lines(directory, name))


def counts(directory: Path) -> dict[str, int]:
    """Every count file of ``directory`` and its number of lines."""
    return {path.name: len(lines(directory, path.name)) for path in directory.iterdir()}


def plan(messages: list[Any]) -> AssistantMessage:
    """The reply to a conversation: marks first, then the slow step, then the answer."""
    done = {message.tool_name for message in messages if isinstance(message, ToolResultMessage)}
    if "mark" not in done:
        calls = [ToolCall(f"mark-{name}", "mark", {"name": name}) for name in MARKS]
        return scripted_reply("Setting the marks.", *calls)
    if "slow" not in done:
        return scripted_reply(ToolCall("slow-1", "slow", {}))
    return scripted_reply(ANSWER)


def mark_tool(directory: Path) -> AgentTool:
    """A tool without parameters that counts its runs in ``directory`` as ``mark``."""

    @tool
    async def mark() -> str:
        """Set a mark."""
        count(directory, "mark")
        return "marked"

    return mark


def counting_tools(directory: Path) -> list[AgentTool]:
    @tool
    async def mark(name: str) -> str:
        """Set the mark ``name``."""
        count(directory, f"mark-{name}")
        return f"mark {name} set"

    @tool
    async def slow() -> str:
        """Take a while."""
        if count(directory, "slow") == 1 and os.environ.get(STALL_ENV) == "1":
            await anyio.sleep_forever()
        return "slow step done"

    return [mark, slow]


@agents.define("counting")
def counting(params: dict[str, Any]) -> AgentSpec:
    directory = Path(params["dir"])

    def stream(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        count(directory, "model")
        return ScriptedStream([plan(list(context.messages))])(model, context, options)

    return AgentSpec(
        model=ScriptedStream().model, stream_fn=stream, tools=counting_tools(directory)
    )
