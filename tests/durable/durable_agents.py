"""The agents the durable tests run, and a worker process serving them.

Every model call and every tool execution appends a line to a file in the directory named by the
run's ``params["dir"]``, so a test can count what ran (across worker processes) and wait for a
point of the run without sleeping. ``python tests/durable/agents.py DB_URL EXECUTOR_ID`` serves
them until killed.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from pi_core import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    StreamStart,
    TextContent,
)
from pi_core.durable import AgentSpec, DurableAgents, open_worker
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.testing import ScriptedStream

agents = DurableAgents()

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def note(directory: str, name: str, line: str) -> None:
    """Append ``line`` to the file ``name`` of ``directory`` (one write: whole lines only)."""
    with open(Path(directory) / name, "a") as file:
        file.write(line + "\n")


def lines(directory: Path, name: str) -> list[str]:
    path = directory / name
    return path.read_text().splitlines() if path.exists() else []


def _reply(context: Context) -> AssistantMessage:
    """The scripted model: the first reply calls fast_a, fast_b and slow; then it answers."""
    answered = sum(1 for message in context.messages if message.role == "toolResult")
    steering = [m for m in context.messages if m.role == "user"]
    if answered == 0:
        calls = [
            faux_tool_call("fast", {}, id="call-a"),
            faux_tool_call("slow", {}, id="call-slow"),
            faux_tool_call("fast", {}, id="call-b"),
        ]
        return faux_assistant_message(calls, stop_reason="toolUse")
    return faux_assistant_message(
        f"done after {answered} results and {len(steering)} user messages"
    )


def counting_stream(directory: str) -> Any:
    def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        # How many messages the request holds: the system message and the prompt at first.
        note(directory, "model_calls", str(len(context.messages)))
        return ScriptedStream([_reply(context)])(model, context, options)

    return stream_fn


def tools(directory: str) -> list[AgentTool]:
    async def fast(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        note(directory, "tool_runs", tool_call_id)
        return f"{tool_call_id} ok"

    async def slow(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        note(directory, "tool_runs", tool_call_id)
        on_update(AgentToolResult([TextContent("working")]))
        release = Path(directory) / "release"
        # The test, another process, releases the call by creating the file.
        while not release.exists():  # noqa: ASYNC110  # no Event crosses processes
            await anyio.sleep(0.02)
        return AgentToolResult([TextContent("slow ok")], {"released": True})

    return [
        AgentTool("fast", "A quick tool.", SCHEMA, fast),
        AgentTool("slow", "Waits until released.", SCHEMA, slow),
    ]


def rewrite_errors(context: AfterToolCallContext, signal: Any) -> AfterToolCallResult | None:
    """An ``after_tool_call`` that replaces every failed call's text (but never sees an aborted
    call's: an abort skips the hook)."""
    if context.is_error:
        return AfterToolCallResult(content=[TextContent("rewritten by after_tool_call")])
    return None


@agents.define("worker-test")
def worker_test(params: dict[str, Any]) -> AgentSpec:
    directory = params["dir"]
    model = FauxProvider().get_model()
    assert model is not None
    return AgentSpec(
        model=model,
        stream_fn=counting_stream(directory),
        tools=tools(directory),
        system_prompt="You test durable runs.",
        after_tool_call=rewrite_errors,
    )


def blocking_stream(directory: str) -> Any:
    """A model that streams a first word, then hangs until released (or cut by an abort)."""

    async def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        note(directory, "model_calls", str(len(context.messages)))
        reply = ScriptedStream([faux_assistant_message("Thinking about it")], chunk_size=9)
        async for event in reply(model, context, options):
            if event.type == "text_end":
                note(directory, "model_streaming", "waiting")
                release = Path(directory) / "release"
                while not release.exists():  # noqa: ASYNC110  # no Event crosses processes
                    await anyio.sleep(0.02)
            yield event

    return stream_fn


@agents.define("slow-model")
def slow_model(params: dict[str, Any]) -> AgentSpec:
    model = FauxProvider().get_model()
    assert model is not None
    return AgentSpec(model=model, stream_fn=blocking_stream(params["dir"]))


def twice_started_stream(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    """A stream that breaks the event grammar: it starts its reply twice."""

    async def events() -> AsyncIterator[AssistantMessageEvent]:
        partial = AssistantMessage([], model.api, model.provider, model.id)
        yield StreamStart(partial)
        yield StreamStart(partial)

    return events()


@agents.define("malformed")
def malformed(params: dict[str, Any]) -> AgentSpec:
    model = FauxProvider().get_model()
    assert model is not None
    return AgentSpec(model=model, stream_fn=twice_started_stream)


def _one_call_reply(context: Context) -> AssistantMessage:
    """Calls the tool ``produce`` once, then says what it got."""
    results = [m for m in context.messages if m.role == "toolResult"]
    if not results:
        return faux_assistant_message(
            [faux_tool_call("produce", {}, id="call_1")], stop_reason="toolUse"
        )
    return faux_assistant_message(f"got {len(results)} result")


def producing_tools(params: dict[str, Any]) -> list[AgentTool]:
    """``produce`` returns what ``params["kind"]`` says: ``"text"`` of ``params["size"]``
    characters (after waiting for the file ``release``, with ``"wait"``), or ``"lock"``, a
    result whose details hold a lock, which no record can hold."""
    directory = params["dir"]

    async def produce(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        note(directory, "tool_runs", tool_call_id)
        if params.get("wait"):
            release = Path(directory) / "release"
            while not release.exists():  # noqa: ASYNC110  # no Event crosses processes
                await anyio.sleep(0.02)
        if params["kind"] == "lock":
            return AgentToolResult([TextContent("locked")], {"lock": threading.Lock()})
        return "x" * params["size"]

    return [AgentTool("produce", "Produces a result.", SCHEMA, produce)]


@agents.define("producer")
def producer(params: dict[str, Any]) -> AgentSpec:
    model = FauxProvider().get_model()
    assert model is not None

    def stream_fn(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        return ScriptedStream([_one_call_reply(context)])(model, context, options)

    return AgentSpec(model=model, stream_fn=stream_fn, tools=producing_tools(params))


@agents.define("broken")
def broken(params: dict[str, Any]) -> AgentSpec:
    raise RuntimeError("no model configured")


async def serve(database_url: str, executor_id: str) -> None:
    async with open_worker(agents, database_url, executor_id=executor_id, app_version="tests"):
        print("ready", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1], sys.argv[2], backend="asyncio")


async def run_in_process(name: str, params: dict[str, Any], prompt: str) -> list[Any]:
    """The events of the same run made by the ordinary loop in this process: the reference."""
    from pi_core import AgentContext, AgentLoopConfig, UserMessage, run_agent_loop

    spec = agents.build(name, params)
    config = AgentLoopConfig(
        spec.model, stream_fn=spec.stream_fn, after_tool_call=spec.after_tool_call
    )
    context = AgentContext(spec.system_prompt, [], list(spec.tools))
    events: list[Any] = []
    await run_agent_loop([UserMessage([TextContent(prompt)])], context, config, events.append)
    return events


def without_timestamps(message: Any) -> Any:
    """The message with its timestamp zeroed and its duration cleared: what two runs at
    different times share."""
    import attrs

    if getattr(message, "duration_ms", None) is not None:
        message = attrs.evolve(message, duration_ms=None)
    return attrs.evolve(message, timestamp=0)


def lifecycle(events: list[Any]) -> list[str]:
    """Event types without the updates, which may repeat after a crash."""
    return [e.type for e in events if e.type not in ("message_update", "tool_execution_update")]
