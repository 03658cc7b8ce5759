"""Shared helpers for the loop and Agent tests: recorders, tools and scripted streams."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

from pi_core import (
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamDone,
    StreamOptions,
    StreamStart,
    TextContent,
    TextDelta,
    TextStart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import check_event_grammar

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class Recorder:
    """An emit callback that keeps every event."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    @property
    def types(self) -> list[str]:
        return [event.type for event in self.events]

    def types_without_updates(self) -> list[str]:
        return [kind for kind in self.types if kind != "message_update"]

    def of_type(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type == kind]


def make_tool(
    name: str,
    execute: Callable[..., Awaitable[object]] | None = None,
    *,
    parameters: dict[str, Any] | None = None,
    **options: Any,
) -> AgentTool:
    """A tool named ``name``; by default it answers ``"<name> done"``."""

    async def default(
        tool_call_id: str, params: Any, signal: Any, on_update: Any
    ) -> AgentToolResult | str:
        return f"{name} done"

    return AgentTool(
        name, f"The {name} tool.", parameters or EMPTY_SCHEMA, execute or default, **options
    )


def faux() -> FauxProvider:
    """A faux provider with one model, seeded for repeatable chunking."""
    return FauxProvider(seed=1)


def calls_then_text(*names: str) -> FauxProvider:
    """A faux provider whose first reply calls the named tools (ids c0, c1 …), then says "after"."""
    provider = faux()
    calls = [faux_tool_call(name, {}, id=f"c{i}") for i, name in enumerate(names)]
    provider.set_responses(
        [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("after")]
    )
    return provider


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


def done_only_stream(
    message: AssistantMessage,
) -> Callable[..., AsyncIterator[AssistantMessageEvent]]:
    """A stream function whose reply is a single ``done`` event (no ``start``)."""

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield StreamDone("stop", message)

    return stream


class BlockingStream:
    """A stream function that streams one text delta, then waits until cancelled.

    ``started`` is set once the delta has been yielded; ``closed`` once the generator was closed.
    """

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.closed = False
        self.calls = 0

    async def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.calls += 1
        partial = AssistantMessage([], model.api, model.provider, model.id)
        try:
            yield StreamStart(partial)
            partial.content.append(TextContent(""))
            yield TextStart(0, partial)
            partial.content[0].text += "Hel"  # type: ignore[union-attr]
            yield TextDelta(0, "Hel", partial)
            self.started.set()
            await anyio.sleep_forever()
        finally:
            self.closed = True


def logging_getter(log: list[str], tag: str, *messages: Any) -> Callable[[], list[Any]]:
    """A queue getter that notes each poll in ``log`` and returns ``messages`` every time."""

    def get() -> list[Any]:
        log.append(tag)
        return list(messages)

    return get


async def run_tool_call(
    agent_tool: AgentTool, arguments: dict[str, Any], signal: AbortSignal | None = None
) -> tuple[ToolResultMessage, Recorder]:
    """Run the loop on one reply calling ``agent_tool`` once, then a text reply: the call's
    result message, and every event (checked against the event grammar)."""
    provider = faux()
    call = faux_tool_call(agent_tool.name, arguments, id="c1")
    provider.set_responses(
        [faux_assistant_message([call], stop_reason="toolUse"), faux_assistant_message("ok")]
    )
    config = AgentLoopConfig(provider.get_model(), stream_fn=provider.stream)
    recorder = Recorder()
    context = AgentContext(tools=[agent_tool])
    with anyio.fail_after(10):
        new = await run_agent_loop([UserMessage("go")], context, config, recorder, signal=signal)
    check_event_grammar(recorder.events)
    [result] = [message for message in new if isinstance(message, ToolResultMessage)]
    return result, recorder
