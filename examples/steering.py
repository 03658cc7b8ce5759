"""Steering and follow-ups: talk to an agent while it works.

Run it:  python examples/steering.py [asyncio|trio]

While the first tool call runs, another task steers the agent (the message is injected after the
tool batch, before the next model call) and queues a follow-up (injected when the agent would
otherwise stop). ``steer`` and ``follow_up`` are plain synchronous calls, safe from any task of
the same event loop.
"""

from __future__ import annotations

import sys

import anyio

from pi_core import (
    AbortSignal,
    Agent,
    AgentEvent,
    AgentToolResult,
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    ToolUpdateCallback,
    UserMessage,
    tool,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call


@tool
async def research(topic: str, on_update: ToolUpdateCallback) -> str:
    """Research a topic, reporting progress."""
    for percent in (25, 50, 75):
        await anyio.sleep(0.05)
        on_update(AgentToolResult([TextContent(f"{percent}%")]))
    await anyio.sleep(0.05)
    return f"notes on {topic}"


def scripted_reply(
    context: Context, options: StreamOptions, call_count: int, model: Model
) -> AssistantMessage:
    """The first prompt starts research; any later message is acknowledged in words."""
    last = context.messages[-1]
    if isinstance(last, UserMessage) and call_count == 1:
        return faux_assistant_message(
            faux_tool_call("research", {"topic": _text(last)}), stop_reason="toolUse"
        )
    if isinstance(last, ToolResultMessage):
        return faux_assistant_message("Research finished.")
    return faux_assistant_message(f"OK: {_text(last)}")


def show(event: AgentEvent, signal: AbortSignal) -> None:
    if event.type == "message_end" and isinstance(event.message, UserMessage):
        print(f"user      > {_text(event.message)}")
    elif event.type == "message_end" and isinstance(event.message, AssistantMessage):
        if text := _text(event.message):
            print(f"assistant > {text}")
    elif event.type == "tool_execution_start":
        print(f"tool      > {event.tool_name}({event.args}) started")
    elif event.type == "tool_execution_update":
        print(f"tool      > {event.tool_name}: {_text(event.partial_result)}")
    elif event.type == "tool_execution_end":
        print(f"tool      > {event.tool_name}: {_text(event.result)}")


async def main() -> Agent:
    faux = FauxProvider()
    faux.set_responses([scripted_reply] * 3)
    agent = Agent(model=faux.get_model(), stream_fn=faux.stream, tools=[research])
    agent.subscribe(show)
    tool_started = anyio.Event()

    def watch(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "tool_execution_start":
            tool_started.set()

    agent.subscribe(watch)

    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "the history of trio")
        await tool_started.wait()
        agent.steer("Actually, focus on anyio.")
        agent.follow_up("Then summarise it in one line.")
    return agent


def _text(item: UserMessage | AssistantMessage | AgentToolResult) -> str:
    content = item.content
    if isinstance(content, str):
        return content
    return " ".join(block.text for block in content if isinstance(block, TextContent))


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
