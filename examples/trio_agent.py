"""The agent loop under trio: ``async with agent_loop(...)`` hands out the run's events.

Run it:  python examples/trio_agent.py      (needs trio: pip install '.[trio]')

The run is a child task of the ``async with`` block, so it obeys trio's rules like any other
task: the deadline below cancels it if the model is too slow, and nothing outlives the block.
"""

from __future__ import annotations

from typing import Any

import trio

from pi_core import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    TextContent,
    ToolUpdateCallback,
    UserMessage,
    agent_loop,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call


async def add(
    tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: ToolUpdateCallback
) -> str:
    await trio.sleep(0.05)  # trio code is at home in a tool when the loop is trio
    return str(params["a"] + params["b"])


ADD = AgentTool(
    name="add",
    description="Add two numbers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
    execute=add,
)


async def main() -> list[Any]:
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("add", {"a": 2, "b": 40})], stop_reason="toolUse"
            ),
            faux_assistant_message("2 + 40 = 42."),
        ]
    )
    context = AgentContext(system_prompt="You can add.", tools=[ADD])
    config = AgentLoopConfig(model=faux.get_model(), stream_fn=faux.stream)
    prompt = UserMessage([TextContent("What is 2 + 40?")])

    with trio.fail_after(10):  # cancellation from outside is plain trio cancellation
        async with agent_loop([prompt], context, config) as events:
            async for event in events:
                if event.type != "message_update":  # skip the many streaming updates
                    print(event.type)
            new_messages = await events.result()
    answer = new_messages[-1]
    assert isinstance(answer, AssistantMessage)
    print("answer:", " ".join(b.text for b in answer.content if isinstance(b, TextContent)))
    return new_messages


if __name__ == "__main__":
    trio.run(main)
