"""An agent for the worker processes of the durable compaction tests: its context window is so
small that its run compacts, and every request it gets is counted in a file.

``compacting`` calls ``bulky`` (a 700-character result) until it has seen ``BULKY_CALLS``
results, then ``slow`` once, then answers. Its model plans from the conversation it is sent,
counting the ``bulky`` results it sees and those a summary says were made, so a replayed or a
compacted run asks for the same reply as the first. Asked for a summary (a request without tools
that shows the conversation as text), it writes how many ``bulky`` results the conversation had.

``overflowing`` is the same agent with a model whose context window is unknown and which
refuses a request holding ``OVERFLOW_AT`` results (or the ``overflow_at`` param) as too long:
its run compacts only then, and retries. With the ``approve_slow`` param, ``compacting``'s
``slow`` call needs approval.

The factory's ``dir`` param names the directory of the count files: ``model`` gets a line per
request of the conversation, ``summary`` one per summary request (the request's digest, so a
request made twice shows), ``slow`` one per call. In a process started with ``STALL_SLOW=1``,
the first ``slow`` call waits forever: the test's cue to kill that worker mid-call.

Serve it with ``pi-core worker durable._compacting_agents:agents`` (tests/ on PYTHONPATH).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from durable._counting_agents import STALL_ENV, count
from durable.durable_agents import note
from pi_core import (
    AgentTool,
    AssistantMessage,
    AssistantMessageEvent,
    CompactionPolicy,
    Context,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    tool,
)
from pi_core.durable import AgentSpec, DurableAgents
from pi_core.providers.faux import faux_assistant_message
from pi_core.testing import ScriptedStream, scripted_reply

BULKY_CALLS = 5
BULKY_RESULT = "x" * 700
"""About 200 tokens: three of them pass the threshold of the agent's policy."""
MODEL = attrs.evolve(ScriptedStream().model, context_window=1_000)
POLICY = CompactionPolicy(threshold=0.5, keep_recent_tokens=100)

OVERFLOW_AT = 4
"""``overflowing`` refuses a request holding this many ``bulky`` results as too long."""
TOO_LONG = "This model's maximum context length is 1000 tokens (context_length_exceeded)"

_SUMMARISED = re.compile(r"bulky results so far: (\d+)")

agents = DurableAgents()


def bulky_results(messages: Sequence[Message]) -> int:
    """The ``bulky`` results of a conversation: those it holds and those its summary counts."""
    held = sum(1 for m in messages if isinstance(m, ToolResultMessage) and m.tool_name == "bulky")
    summarised = [
        int(n)
        for m in messages
        if isinstance(m, UserMessage)
        for n in _SUMMARISED.findall(_text(m))
    ]
    return held + max(summarised, default=0)


def _text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


def plan(messages: Sequence[Message]) -> AssistantMessage:
    """The reply to a conversation: ``bulky`` calls, then ``slow``, then the answer."""
    done = bulky_results(messages)
    if done < BULKY_CALLS:
        return scripted_reply(ToolCall(f"bulky-{done + 1}", "bulky", {}))
    if not any(isinstance(m, ToolResultMessage) and m.tool_name == "slow" for m in messages):
        return scripted_reply(ToolCall("slow-1", "slow", {}))
    return scripted_reply(f"done after {done} bulky results")


def summarise(request: str) -> AssistantMessage:
    """The summary of the conversation a summary request shows."""
    held = request.count("[Result of bulky]")
    earlier = [int(n) for n in _SUMMARISED.findall(request)]
    return scripted_reply(f"bulky results so far: {held + max(earlier, default=0)}")


def compacting_tools(directory: Path, *, approve_slow: bool = False) -> list[AgentTool]:
    @tool
    async def bulky() -> str:
        """Return a long text."""
        return BULKY_RESULT

    @tool(requires_approval=approve_slow)
    async def slow() -> str:
        """Take a while."""
        if count(directory, "slow") == 1 and os.environ.get(STALL_ENV) == "1":
            await anyio.sleep_forever()
        return "slow step done"

    return [bulky, slow]


def counting_stream(directory: Path, *, overflow_at: int | None = None) -> Any:
    """The model: it summarises a summary request, and plans every other reply; it refuses a
    request holding ``overflow_at`` results as too long."""

    def stream(
        model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        first = context.messages[0] if context.messages else None
        request = _text(first) if isinstance(first, UserMessage) else ""
        if not context.tools and request.startswith("<conversation>"):
            note(str(directory), "summary", hashlib.sha256(request.encode()).hexdigest())
            reply = summarise(request)
        else:
            count(directory, "model")
            held = sum(1 for m in context.messages if isinstance(m, ToolResultMessage))
            if overflow_at is not None and held >= overflow_at:
                reply = faux_assistant_message("", stop_reason="error", error_message=TOO_LONG)
            else:
                reply = plan(list(context.messages))
        return ScriptedStream([reply])(model, context, options)

    return stream


def spec_of(
    directory: Path, *, overflow_at: int | None = None, approve_slow: bool = False
) -> AgentSpec:
    """The agent; with ``overflow_at``, its model's window is unknown (only an overflow
    compacts) and it refuses a request holding that many results; with ``approve_slow``, its
    ``slow`` call waits for a decision."""
    return AgentSpec(
        model=MODEL if overflow_at is None else attrs.evolve(MODEL, context_window=0),
        stream_fn=counting_stream(directory, overflow_at=overflow_at),
        tools=compacting_tools(directory, approve_slow=approve_slow),
        system_prompt="You call tools.",
        compaction=POLICY,
    )


@agents.define("compacting")
def compacting(params: dict[str, Any]) -> AgentSpec:
    return spec_of(Path(params["dir"]), approve_slow=params.get("approve_slow", False))


@agents.define("overflowing")
def overflowing(params: dict[str, Any]) -> AgentSpec:
    return spec_of(Path(params["dir"]), overflow_at=params.get("overflow_at", OVERFLOW_AT))
