"""pydantic-ai on the turns scenario: a ``FunctionModel`` replaying the script, one no-op tool.

Two modes:

* ``streamed``: the model is a ``stream_function`` (three text pieces, then a tool-call delta),
  and the run is ``agent.run(..., event_stream_handler=...)``, which streams every model request
  and hands each node's events to the handler, running tools until the output is final. This is
  the closest match to pi_core's loop with its event callback. (``agent.run_stream`` would take
  the first reply's text as the final output and ask the model no more.)
* ``function``: the model is a plain async ``function`` returning whole ``ModelResponse``s and the
  run is ``agent.run(...)``: no streaming at all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

from .script import PIECES, RESULT, TEXT, TOOL, PeerRun, Tally, call_id

__all__ = ["prepare_function", "prepare_streamed"]

# The default request limit (50) would end a long run; the scenario wants every turn.
NO_LIMITS = UsageLimits(request_limit=None)


def prepare_streamed(turns: int) -> PeerRun:
    """A streamed run: ``stream_function`` model, ``agent.run`` with an event handler."""
    tally = Tally()
    replies = [_stream_items(turn, last=turn == turns - 1) for turn in range(turns)]

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        reply = replies[tally.model_calls]
        tally.model_calls += 1
        for item in reply:
            yield item

    async def consume(ctx: Any, events: AsyncIterator[Any]) -> None:
        async for event in events:
            if _is_text_piece(event):
                tally.text_pieces += 1

    agent = _agent(FunctionModel(stream_function=stream, model_name="scripted"), tally)

    async def run() -> int:
        result = await agent.run("go", usage_limits=NO_LIMITS, event_stream_handler=consume)
        return tally.verify(turns, result.output, streamed=True)

    return run


def prepare_function(turns: int) -> PeerRun:
    """A run without streaming: an async ``function`` model returning whole responses."""
    tally = Tally()
    replies = [_response(turn, last=turn == turns - 1) for turn in range(turns)]

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = replies[tally.model_calls]
        tally.model_calls += 1
        return reply

    agent = _agent(FunctionModel(respond, model_name="scripted"), tally)

    async def run() -> int:
        result = await agent.run("go", usage_limits=NO_LIMITS)
        return tally.verify(turns, result.output, streamed=False)

    return run


def _agent(model: FunctionModel, tally: Tally) -> Agent[None, str]:
    # An async tool, as pi_core's is: pydantic-ai runs a sync tool in a worker thread.
    async def noop() -> str:
        """Does nothing."""
        tally.tool_calls += 1
        return RESULT

    # A name, so that each run does not inspect the caller's frame to infer one.
    return Agent(model, name="bench", tools=[noop])


def _stream_items(turn: int, *, last: bool) -> list[Any]:
    items: list[Any] = list(PIECES)
    if not last:
        items.append({0: DeltaToolCall(TOOL, "{}", tool_call_id=call_id(turn))})
    return items


def _response(turn: int, *, last: bool) -> ModelResponse:
    parts: list[Any] = [TextPart(TEXT)]
    if not last:
        parts.append(ToolCallPart(TOOL, "{}", tool_call_id=call_id(turn)))
    # With no usage, FunctionModel estimates tokens over the whole history on every request, a
    # cost of the test model that a real model (which reports usage) does not have.
    return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=1, output_tokens=1))


def _is_text_piece(event: Any) -> bool:
    """A streamed piece of text: the part's start (first piece) or a text delta."""
    if isinstance(event, PartStartEvent):
        return isinstance(event.part, TextPart)
    return isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta)
