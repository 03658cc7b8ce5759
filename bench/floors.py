"""The floor of each scenario: the same work with no agent logic, only what it cannot avoid.

Per turn: filter the whole history by role (as ``convert_to_llm`` must), iterate an 8-event async
generator, emit 16 small objects to an awaited no-op callback, run one child in a fresh task
group, and add the turn's two messages to the history. Fan-out: N children sleeping 10 ms in one
task group; sequential: N such task groups one after another. Streaming: an async generator with
a checkpoint per delta. Agents: A tasks at once, each doing three turns whose first two children
sleep 10 ms.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio
import anyio.lowlevel

from pi_core import AgentMessage, AssistantMessage, TextContent, ToolResultMessage, UserMessage

from .scenarios import LLM_ROLES, Run

__all__ = ["prepare"]

_USER = UserMessage("go")
_EMITS_PER_TURN = 16

Child = Callable[..., Coroutine[Any, Any, Any]]


class _Tiny:
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


_EIGHT = tuple(_Tiny(index) for index in range(8))


class _Sink:
    """The awaited no-op callback; counts what it receives."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events = 0

    async def emit(self, item: _Tiny) -> None:
        self.events += 1


async def _eight_events(messages: list[AgentMessage]) -> AsyncIterator[_Tiny]:
    for event in _EIGHT:
        yield event


async def _nothing() -> None:
    pass


async def _turn(history: list[AgentMessage], sink: _Sink, child: Child, *args: Any) -> None:
    llm_messages = [message for message in history if message.role in LLM_ROLES]
    async for _ in _eight_events(llm_messages):
        pass
    for index in range(_EMITS_PER_TURN):
        await sink.emit(_Tiny(index))
    async with anyio.create_task_group() as tg:
        tg.start_soon(child, *args)
    # New messages each turn, as a transcript has: a history of two shared objects would keep
    # the filter in the CPU cache, which no real history of thousands of messages is.
    history.append(AssistantMessage([TextContent("abc")], "bench", "bench", "bench"))
    history.append(ToolResultMessage("call_0", "noop", [TextContent("ok")]))


async def _three_turns(sink: _Sink, child: Child, *args: Any) -> None:
    history: list[AgentMessage] = [_USER]
    await _turn(history, sink, child, *args)
    await _turn(history, sink, child, *args)
    await _turn(history, sink, _nothing)


def prepare(name: str, n: int) -> Run:
    """Set up one round of the floor of scenario ``name`` at size ``n``; return the run to time."""
    return _PREPARERS[name](n)


def _turns(turns: int) -> Run:
    async def run() -> int:
        sink = _Sink()
        history: list[AgentMessage] = [_USER]
        for _ in range(turns):
            await _turn(history, sink, _nothing)
        return sink.events

    return run


def _fanout(children: int) -> Run:
    async def run() -> int:
        async with anyio.create_task_group() as tg:
            for _ in range(children):
                tg.start_soon(anyio.sleep, 0.010)
        return 0

    return run


def _sequential(children: int) -> Run:
    async def run() -> int:
        for _ in range(children):
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.sleep, 0.010)
        return 0

    return run


def _streaming(deltas: int) -> Run:
    async def generate() -> AsyncIterator[_Tiny]:
        item = _Tiny("x")
        for _ in range(deltas):
            await anyio.lowlevel.checkpoint()
            yield item

    async def run() -> int:
        count = 0
        async for _ in generate():
            count += 1
        return count

    return run


def _agents(count: int) -> Run:
    async def run() -> int:
        sink = _Sink()
        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(_three_turns, sink, anyio.sleep, 0.010)
        return sink.events

    return run


def _memory(runs: int) -> Run:
    async def run() -> int:
        sink = _Sink()
        for _ in range(runs):
            await _three_turns(sink, _nothing)
        return sink.events

    return run


_PREPARERS: dict[str, Callable[[int], Run]] = {
    "turns": _turns,
    "fanout": _fanout,
    "sequential": _sequential,
    "streaming": _streaming,
    "agents": _agents,
    "memory": _memory,
}
