"""An agent using the tools of a published MCP server: ``mcp-server-time``, over stdio.

Needs the ``mcp`` extra and the server (``pip install '.[mcp]' mcp-server-time`` in the checkout). The
model is scripted (no network, no key); with a real one, drop the FauxProvider lines and pass
``model=get_model(...)``. ``python examples/mcp_tools.py [asyncio|trio]``.
"""

from __future__ import annotations

import sys

import anyio

from pi_core import Agent, AgentEvent, ToolExecutionEnd
from pi_core.mcp import StdioServer, mcp_tools
from pi_core.nursery import AbortSignal
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

TIME_SERVER = StdioServer(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])


def show(event: AgentEvent, _signal: AbortSignal) -> None:
    if isinstance(event, ToolExecutionEnd):
        print(f"[tool] {event.tool_name} -> {event.result.details}")


async def main() -> None:
    model = FauxProvider()
    model.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("time_get_current_time", {"timezone": "Asia/Tokyo"}),
                    faux_tool_call(
                        "time_convert_time",
                        {
                            "source_timezone": "UTC",
                            "time": "09:30",
                            "target_timezone": "Europe/Paris",
                        },
                    ),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("Tokyo is nine hours ahead of UTC."),
        ]
    )
    # One session for the whole block: both calls of the batch share it, in parallel.
    async with mcp_tools(TIME_SERVER, prefix="time_") as tools:
        print("[tools]", ", ".join(tool.name for tool in tools))
        agent = Agent(model=model.get_model(), stream_fn=model.stream, tools=tools)
        agent.subscribe(show)
        await agent.prompt("What time is it in Tokyo, and what is 09:30 UTC in Paris?")
    print("[answer]", agent.state.messages[-1].content[0].text)  # type: ignore[union-attr]


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
