"""An Agent inside a plain asyncio program: a tool, a listener printing the reply as it streams.

Run it:  python examples/asyncio_agent.py

It uses the scripted faux model, so it needs no network and no key. For a real model, name it
and leave out ``stream_fn`` (the rest stays the same; the key comes from OPENAI_API_KEY)::

    agent = Agent(model="openai/gpt-4o-mini", tools=[get_weather])
"""

from __future__ import annotations

import asyncio

from pi_core import AbortSignal, Agent, AgentEvent, TextContent, tool
from pi_core.providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
)


@tool
async def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: the city's name.
    """
    await asyncio.sleep(0.05)  # any asyncio code works in a tool when the loop is asyncio
    return f"Sunny and 21 °C in {city}"


def scripted_model() -> FauxProvider:
    """Two replies: a tool call, then an answer that uses its result."""
    faux = FauxProvider(tokens_per_second=400)
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_text("Let me check."), faux_tool_call("get_weather", {"city": "Lisbon"})],
                stop_reason="toolUse",
            ),
            faux_assistant_message("It is sunny and 21 °C in Lisbon: a good day for a walk."),
        ]
    )
    return faux


def show(event: AgentEvent, signal: AbortSignal) -> None:
    """A listener: print text as it streams, and each tool call as it starts and ends."""
    if event.type == "message_update":
        update = event.assistant_message_event
        if update.type == "text_delta":
            print(update.delta, end="", flush=True)
        elif update.type == "text_end":
            print()
    elif event.type == "tool_execution_start":
        print(f"[tool] {event.tool_name}({event.args})")
    elif event.type == "tool_execution_end":
        text = " ".join(b.text for b in event.result.content if isinstance(b, TextContent))
        print(f"[tool] {event.tool_name} -> {text}")


async def main() -> Agent:
    faux = scripted_model()
    agent = Agent(
        system_prompt="You are a helpful assistant.",
        model=faux.get_model(),
        stream_fn=faux.stream,
        tools=[get_weather],
    )
    agent.subscribe(show)
    await agent.prompt("What's the weather in Lisbon?")
    # The system prompt and the tool declaration are its first message.
    print(f"[done] {len(agent.state.messages)} messages in the transcript")
    return agent


if __name__ == "__main__":
    asyncio.run(main())
