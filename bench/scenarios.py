"""The benchmark scenarios: what each one measures, and how it runs through pi_core.

Every scenario talks to a scripted instant model: pre-built replies replayed event by event, with
no chunking and no waiting (except the streaming scenario, which checkpoints once per delta), and
a ``convert_to_llm`` that keeps system / user / assistant / toolResult messages, as the default
does. A loop run's context has tools its transcript does not declare, so each run starts with the
system message that declares them (:attr:`Spec.declared`).
:func:`prepare` does a round's setup and returns the coroutine function to time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from pi_core import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Message,
    Model,
    StreamDone,
    StreamOptions,
    StreamStart,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    UserMessage,
    run_agent_loop,
)
from pi_core.nursery import AbortSignal

__all__ = ["QUICK", "SPECS", "Run", "Spec", "prepare"]

Run = Callable[[], Awaitable[int]]
"""One timed run of a scenario; returns the number of events it emitted."""


@dataclass(frozen=True)
class Spec:
    """What a scenario measures and which event count proves it ran as scripted."""

    name: str
    param: str
    """The name of the size parameter: T turns, N tools, D deltas, A agents, runs."""
    sizes: tuple[int, ...]
    """The sizes of a full benchmark run."""
    smoke: int
    """A tiny size for the smoke test."""
    unit: str
    events: Callable[[int], int]
    """The event count a run of size n must emit, besides :attr:`declared`."""
    overhead_s: float = 0.0
    """Wall time no implementation can avoid; subtracted before dividing by n."""
    rounds: int | None = None
    """Rounds per process, when the default is too many for this scenario."""
    warmup_divisor: int = 1
    """The warm-up runs the scenario at size n // warmup_divisor."""
    least_seconds: Callable[[int], float] = lambda n: 0.0
    """The wall time its sleeps take at the least: a faster run did not do what it should."""
    node_events: Callable[[int], int] | None = None
    """The event count of a run of pi-agent-core 0.73.1 (``events`` when ``None``)."""
    declared: Callable[[int], int] = lambda n: 0
    """The events pi_core and 1.6.0 add to 0.73.1's: the system message that declares a loop
    run's tools (``message_start`` and ``message_end``) before its first turn."""

    def per_unit_us(self, seconds: float, n: int) -> float:
        return (seconds - self.overhead_s) / n * 1e6


SPECS: dict[str, Spec] = {
    spec.name: spec
    for spec in (
        Spec(
            "turns",
            "T",
            (2000,),
            smoke=3,
            unit="turn",
            events=lambda t: 16 * t - 3,
            node_events=lambda t: 16 * t - 3,
            declared=lambda t: 2,
        ),
        Spec(
            "fanout",
            "N",
            (10, 100, 1000, 5000),
            smoke=3,
            unit="tool",
            events=lambda n: 7 * n + 22,
            node_events=lambda n: 7 * n + 22,
            declared=lambda n: 2,
            overhead_s=0.010,
            least_seconds=lambda n: 0.010,
        ),
        Spec(
            "sequential",
            "N",
            (100,),
            smoke=3,
            unit="tool",
            events=lambda n: 7 * n + 22,
            node_events=lambda n: 7 * n + 22,
            declared=lambda n: 2,
            least_seconds=lambda n: 0.010 * n,
        ),
        Spec("streaming", "D", (100_000,), smoke=10, unit="delta", events=lambda d: d + 10),
        Spec(
            "agents",
            "A",
            (1000,),
            smoke=3,
            unit="agent",
            events=lambda a: 45 * a,
            least_seconds=lambda a: 0.020,
        ),
        Spec(
            "memory",
            "runs",
            (10_000,),
            smoke=3,
            unit="run",
            events=lambda r: 45 * r,
            node_events=lambda r: 45 * r,
            declared=lambda r: 2 * r,
            rounds=1,
            warmup_divisor=10,
        ),
    )
}

QUICK: dict[str, tuple[int, ...]] = {
    "turns": (200,),
    "fanout": (10, 100, 1000),
    "sequential": (20,),
    "streaming": (10_000,),
    "agents": (100,),
    "memory": (1000,),
}
"""Smaller sizes, for ``--quick`` runs and for counting instructions under valgrind."""

# --- the model, the tools, the scripted replies --------------------------------------------------

MODEL = Model("bench", api="bench", provider="bench")
LLM_ROLES = frozenset(("system", "user", "assistant", "toolResult"))
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
TOOL_RESULT = AgentToolResult([TextContent("ok")])


def convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """Keep the messages a model understands, as every real ``convert_to_llm`` must."""
    return [message for message in messages if message.role in LLM_ROLES]  # type: ignore[misc]


async def _noop(tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any) -> Any:
    return TOOL_RESULT


async def _sleep_10ms(tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any) -> Any:
    await anyio.sleep(0.010)
    return TOOL_RESULT


NOOP_TOOL = AgentTool("noop", "Does nothing.", EMPTY_SCHEMA, _noop)
SLEEP_TOOL = AgentTool("sleep", "Sleeps 10 ms.", EMPTY_SCHEMA, _sleep_10ms)

Reply = Sequence[AssistantMessageEvent]


def tool_reply(tool: str, calls: int) -> Reply:
    """Three text deltas, then ``calls`` tool calls (start, one argument delta, end) to ``tool``."""
    blocks = [ToolCall(f"call_{index}", tool, {}) for index in range(calls)]
    message = AssistantMessage(
        [TextContent("abc"), *blocks], "bench", "bench", "bench", stop_reason="toolUse"
    )
    events: list[AssistantMessageEvent] = [*_text_events(message), *_call_events(message, blocks)]
    events.append(StreamDone("toolUse", message))
    return events


def text_reply() -> Reply:
    """A text-only reply of three deltas."""
    message = AssistantMessage([TextContent("abc")], "bench", "bench", "bench")
    return [*_text_events(message), StreamDone("stop", message)]


def _text_events(message: AssistantMessage) -> list[AssistantMessageEvent]:
    deltas = [TextDelta(0, letter, message) for letter in "abc"]
    return [StreamStart(message), TextStart(0, message), *deltas, TextEnd(0, "abc", message)]


def _call_events(message: AssistantMessage, blocks: list[ToolCall]) -> list[AssistantMessageEvent]:
    events: list[AssistantMessageEvent] = []
    for index, block in enumerate(blocks, start=1):
        events += [
            ToolCallStart(index, message),
            ToolCallDelta(index, "{}", message),
            ToolCallEnd(index, block, message),
        ]
    return events


class Scripted:
    """A stream function replaying one pre-built reply per call, instantly."""

    __slots__ = ("_next", "_replies")

    def __init__(self, replies: Sequence[Reply]) -> None:
        self._replies = replies
        self._next = 0

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        reply = self._replies[self._next]
        self._next += 1
        return _replay(reply)


async def _replay(reply: Reply) -> AsyncIterator[AssistantMessageEvent]:
    for event in reply:
        yield event


class DeltaStream:
    """A stream function whose one reply is ``deltas`` text deltas, one per checkpoint."""

    __slots__ = ("_deltas",)

    def __init__(self, deltas: int) -> None:
        self._deltas = deltas

    async def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        message = AssistantMessage([TextContent("")], "bench", "bench", "bench")
        yield StreamStart(message)
        yield TextStart(0, message)
        delta = TextDelta(0, "x", message)
        for _ in range(self._deltas):
            await anyio.lowlevel.checkpoint()
            yield delta
        yield TextEnd(0, "x" * self._deltas, message)
        yield StreamDone("stop", message)


class Counter:
    """An awaited no-op event sink that counts what it receives."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events = 0

    async def emit(self, event: AgentEvent) -> None:
        self.events += 1

    async def listen(self, event: AgentEvent, signal: AbortSignal) -> None:
        self.events += 1


# --- the scenarios -------------------------------------------------------------------------------


def prepare(name: str, n: int) -> Run:
    """Set up one round of scenario ``name`` at size ``n``; return the run to time."""
    return _PREPARERS[name](n)


def _loop_run(replies: Sequence[Reply], tool: AgentTool, **config: Any) -> Run:
    async def run() -> int:
        counter = Counter()
        await _one_loop(replies, tool, counter, **config)
        return counter.events

    return run


async def _one_loop(
    replies: Sequence[Reply], tool: AgentTool, counter: Counter, **config: Any
) -> None:
    loop_config = AgentLoopConfig(
        MODEL, stream_fn=Scripted(replies), convert_to_llm=convert_to_llm, **config
    )
    context = AgentContext(tools=[tool])
    await run_agent_loop([UserMessage("go")], context, loop_config, counter.emit)


def _turns(turns: int) -> Run:
    replies = [tool_reply("noop", 1)] * (turns - 1) + [text_reply()]
    return _loop_run(replies, NOOP_TOOL)


def _fanout(tools: int) -> Run:
    return _loop_run([tool_reply("sleep", tools), text_reply()], SLEEP_TOOL)


def _sequential(tools: int) -> Run:
    replies = [tool_reply("sleep", tools), text_reply()]
    return _loop_run(replies, SLEEP_TOOL, tool_execution="sequential")


def _streaming(deltas: int) -> Run:
    async def run() -> int:
        counter = Counter()
        config = AgentLoopConfig(
            MODEL, stream_fn=DeltaStream(deltas), convert_to_llm=convert_to_llm
        )
        await run_agent_loop([UserMessage("go")], AgentContext(), config, counter.emit)
        return counter.events

    return run


def _three_turns(tool: str) -> list[Reply]:
    call = tool_reply(tool, 1)
    return [call, call, text_reply()]


def _agents(count: int) -> Run:
    replies = _three_turns("sleep")
    counter = Counter()
    agents = []
    for _ in range(count):
        agent = Agent(
            model=MODEL,
            tools=[SLEEP_TOOL],
            stream_fn=Scripted(replies),
            convert_to_llm=convert_to_llm,
        )
        agent.subscribe(counter.listen)
        agents.append(agent)

    async def run() -> int:
        async with anyio.create_task_group() as tg:
            for agent in agents:
                tg.start_soon(agent.prompt, "go")
        return counter.events

    return run


def _memory(runs: int) -> Run:
    replies = _three_turns("noop")

    async def run() -> int:
        counter = Counter()
        for _ in range(runs):
            await _one_loop(replies, NOOP_TOOL, counter)
        return counter.events

    return run


_PREPARERS: dict[str, Callable[[int], Run]] = {
    "turns": _turns,
    "fanout": _fanout,
    "sequential": _sequential,
    "streaming": _streaming,
    "agents": _agents,
    "memory": _memory,
}
