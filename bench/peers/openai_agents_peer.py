"""openai-agents on the turns scenario: a scripted ``Model`` subclass, one no-op function tool.

Two modes:

* ``run``: ``Runner.run(...)``, which asks the model for whole responses (``get_response``):
  no streaming.
* ``streamed``: ``Runner.run_streamed(...)``, whose model streams each reply as the Responses API
  events a real reply would have (``stream_response``), consumed through
  ``result.stream_events()``.

Tracing is disabled, so nothing is exported and no network is attempted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)

from .script import PIECES, RESULT, TEXT, TOOL, PeerRun, Tally, call_id

__all__ = ["prepare_run", "prepare_streamed"]

set_tracing_disabled(True)


@dataclass
class Reply:
    """One scripted reply: its output items, and the events that stream it (when streamed)."""

    items: list[Any]
    events: list[Any] = field(default_factory=list)


class ScriptedModel(Model):
    """A model replaying one pre-built reply per request, instantly, counting the requests."""

    def __init__(self, replies: Sequence[Reply], tally: Tally) -> None:
        self._replies = replies
        self._tally = tally

    def _next(self) -> Reply:
        reply = self._replies[self._tally.model_calls]
        self._tally.model_calls += 1
        return reply

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        usage = Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2)
        return ModelResponse(output=self._next().items, usage=usage, response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for event in self._next().events:
            yield event


def prepare_run(turns: int) -> PeerRun:
    """``Runner.run``: whole responses, no streaming."""
    tally = Tally()
    replies = [Reply(_items(turn, last=turn == turns - 1)) for turn in range(turns)]
    agent = _agent(ScriptedModel(replies, tally), tally)

    async def run() -> int:
        result = await Runner.run(agent, "go", max_turns=turns + 1)
        return tally.verify(turns, result.final_output, streamed=False)

    return run


def prepare_streamed(turns: int) -> PeerRun:
    """``Runner.run_streamed``: each reply streamed as Responses API events."""
    tally = Tally()
    replies = [_streamed_reply(turn, last=turn == turns - 1) for turn in range(turns)]
    agent = _agent(ScriptedModel(replies, tally), tally)

    async def run() -> int:
        result = Runner.run_streamed(agent, "go", max_turns=turns + 1)
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.type == _TEXT_DELTA:
                tally.text_pieces += 1
        return tally.verify(turns, result.final_output, streamed=True)

    return run


def _agent(model: ScriptedModel, tally: Tally) -> Agent[Any]:
    # An async tool, as pi_core's is: openai-agents runs a sync function tool in a worker thread.
    async def noop() -> str:
        """Does nothing."""
        tally.tool_calls += 1
        return RESULT

    tool: FunctionTool = function_tool(noop, name_override=TOOL)
    return Agent(name="bench", tools=[tool], model=model)


# --- the scripted replies, as the Responses API would send them ----------------------------------

_TEXT_DELTA = "response.output_text.delta"


def _message(turn: int, text: str, status: str) -> ResponseOutputMessage:
    content = [ResponseOutputText(annotations=[], text=text, type="output_text")] if text else []
    return ResponseOutputMessage(
        id=f"msg_{turn}", content=content, role="assistant", status=status, type="message"
    )


def _call(turn: int, arguments: str, status: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{turn}",
        call_id=call_id(turn),
        name=TOOL,
        arguments=arguments,
        type="function_call",
        status=status,
    )


def _items(turn: int, *, last: bool) -> list[Any]:
    items: list[Any] = [_message(turn, TEXT, "completed")]
    if not last:
        items.append(_call(turn, "{}", "completed"))
    return items


def _response(turn: int, output: list[Any], status: str) -> Response:
    return Response(
        id=f"resp_{turn}",
        created_at=0,
        model="scripted",
        object="response",
        output=output,
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        status=status,
    )


def _streamed_reply(turn: int, *, last: bool) -> Reply:
    """The events of one reply: created, the message's text in pieces, the call, completed."""
    items = _items(turn, last=last)
    events = [_event(ResponseCreatedEvent, response=_response(turn, [], "in_progress"))]
    events += _message_events(turn, items[0])
    if not last:
        events += _call_events(turn, items[1])
    events.append(_event(ResponseCompletedEvent, response=_response(turn, items, "completed")))
    for number, event in enumerate(events):
        event.sequence_number = number
    return Reply(items, events)


def _message_events(turn: int, message: ResponseOutputMessage) -> list[Any]:
    """The message item added, its text part opened, three deltas, then all of it done."""
    at = {"item_id": message.id, "output_index": 0, "content_index": 0}
    empty = ResponseOutputText(annotations=[], text="", type="output_text")
    deltas = [_event(ResponseTextDeltaEvent, **at, delta=piece, logprobs=[]) for piece in PIECES]
    return [
        _event(
            ResponseOutputItemAddedEvent, item=_message(turn, "", "in_progress"), output_index=0
        ),
        _event(ResponseContentPartAddedEvent, **at, part=empty),
        *deltas,
        _event(ResponseTextDoneEvent, **at, text=TEXT, logprobs=[]),
        _event(ResponseContentPartDoneEvent, **at, part=message.content[0]),
        _event(ResponseOutputItemDoneEvent, item=message, output_index=0),
    ]


def _call_events(turn: int, call: ResponseFunctionToolCall) -> list[Any]:
    """The function call item added, its arguments in one delta, then done."""
    at = {"item_id": call.id, "output_index": 1}
    return [
        _event(ResponseOutputItemAddedEvent, item=_call(turn, "", "in_progress"), output_index=1),
        _event(ResponseFunctionCallArgumentsDeltaEvent, **at, delta=call.arguments),
        _event(ResponseFunctionCallArgumentsDoneEvent, **at, arguments=call.arguments),
        _event(ResponseOutputItemDoneEvent, item=call, output_index=1),
    ]


def _event(kind: type[Any], **fields: Any) -> Any:
    """An event of ``kind``, its ``type`` tag read off the model; numbered once the reply is built."""
    tag = kind.model_fields["type"].annotation.__args__[0]  # the Literal's one value
    return kind(type=tag, sequence_number=0, **fields)
