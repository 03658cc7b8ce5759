"""Sub-agents: an Agent that runs inside a tool call of another, as a structured child of it.

The child runs in the call's own task. A cancellation of the call (the parent's abort, the tool's
timeout, the host's cancel scope) becomes an abort of the child, so the child closes out its own
calls before the parent's call ends; see :func:`agent_tool`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from typing import Any, Final

import anyio
import anyio.lowlevel
import attrs
from anyio.abc import TaskStatus

from ._agent import Agent
from ._events import AgentEvent, ToolExecutionUpdate
from ._exceptions import PiCoreError
from ._maybe_async import needs_await
from ._messages import AgentMessage, AssistantMessage, TextContent, ToolCall, ToolResultMessage
from ._output import given_output
from ._result import RunResult
from ._run_control import CURRENT_RUN_CONTROL
from ._texts import clip
from ._tools import AgentTool, AgentToolResult, ToolUpdateCallback
from .nursery import AbortSignal

__all__ = ["MAX_SUBAGENT_DEPTH", "AgentFactory", "SubagentError", "SubagentEvent", "agent_tool"]

MAX_SUBAGENT_DEPTH: Final = 8
"""How deep sub-agents may nest: a call that would start a ninth level is refused."""

AgentFactory = Callable[
    [dict[str, Any]], "Agent | Awaitable[Agent] | AbstractAsyncContextManager[Agent]"
]
"""``factory(args)``: a fresh :class:`Agent` for one call, sync or async, or an async context
manager that gives one (entered and exited inside the call, for what the child's tools need
open, such as an MCP session)."""

TASK_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the sub-agent should do."}},
    "required": ["task"],
}
"""The default parameters of a sub-agent tool: one task, which is the child's prompt."""

_PATH: ContextVar[tuple[str, ...]] = ContextVar("pi_core_subagent_path", default=())
"""The sub-agent tools the current task runs inside, outermost first."""


@attrs.frozen
class SubagentEvent:
    """An event of a sub-agent's run, as the parent's listeners see it.

    It arrives as the ``details`` of a ``tool_execution_update``'s ``partial_result`` for the
    call that runs the child. ``path`` names the sub-agent tools from the outermost child inward:
    ``("research",)`` for the child's own events, ``("research", "search")`` for a grandchild's.
    """

    path: tuple[str, ...]
    event: AgentEvent


class SubagentError(PiCoreError):
    """Why a sub-agent call failed: the child's run failed or was aborted, or it nested too deep.

    The parent's call ends as an error result with this text.
    """


def agent_tool(
    factory: AgentFactory,
    *,
    name: str,
    description: str,
    parameters: dict[str, Any] | None = None,
    share_limits: bool = True,
    forward_events: bool = True,
) -> AgentTool:
    """A tool whose call runs a fresh Agent (from ``factory(args)``) on a prompt and answers
    with its reply.

    With the default ``parameters`` the call takes one ``task`` string, which is the child's
    prompt; with others the prompt is the arguments as JSON. The result's content is the child's
    reply text (a child with an ``output_type`` answers with its typed answer as JSON) and its
    ``details`` the messages the child's run added; the tool result message
    carries the child's ``usage`` (its whole run's, children included, which the parent's
    :attr:`~pi_core.RunResult.usage` adds in) and ``nested_calls``, the record of its tool calls.
    A child run that fails or is aborted makes the call an error result with the child's error
    text.

    The child runs inside the call: the parent's abort, the tool's ``timeout`` (set it with
    ``attrs.evolve(tool, timeout=...)``) and any cancellation of the call abort the child, which closes out its own tool calls before the
    parent's call ends. A stop of the parent (``Agent.stop``) lets the child finish its current
    turn, then ends it. With ``share_limits`` the child's replies count against the parent's
    :class:`~pi_core.RunLimits` as they happen (its turns, tokens and dollars), so a limit the
    child reaches ends the child after its turn and then the parent. With ``forward_events``
    each event of the child reaches the parent's listeners, in the child's order, as a
    ``tool_execution_update`` whose partial result's ``details`` is a :class:`SubagentEvent`.

    Raises:
        ValueError: ``name`` is empty.
    """
    if not name:
        raise ValueError("a sub-agent tool needs a name")
    call = _SubagentCall(factory, name, parameters is None, share_limits, forward_events)
    return AgentTool(
        name=name,
        description=description,
        parameters=TASK_PARAMETERS if parameters is None else parameters,
        execute=call,
    )


class _SubagentCall:
    """The ``execute`` of a sub-agent tool."""

    __slots__ = ("factory", "forward_events", "name", "share_limits", "task_prompt")

    def __init__(
        self,
        factory: AgentFactory,
        name: str,
        task_prompt: bool,
        share_limits: bool,
        forward_events: bool,
    ) -> None:
        self.factory = factory
        self.name = name
        self.task_prompt = task_prompt
        self.share_limits = share_limits
        self.forward_events = forward_events

    async def __call__(
        self,
        _tool_call_id: str,
        args: dict[str, Any],
        _signal: AbortSignal,
        on_update: ToolUpdateCallback,
        /,
    ) -> AgentToolResult:
        path = (*_PATH.get(), self.name)
        if len(path) > MAX_SUBAGENT_DEPTH:
            raise SubagentError(
                f"Sub-agent {self.name} refused: sub-agents nest at most {MAX_SUBAGENT_DEPTH} deep"
                f" ({' > '.join(path)})"
            )
        made = self.factory(args)
        if needs_await(made):
            made = await made
        async with _entered(made) as child:
            result = await self._run(child, args, path, on_update)
            typed = child.output_type is not None and child.output_type is not str
        # A cancellation of the call, held off while the child closed out (and its context
        # manager exited), lands here.
        await anyio.lowlevel.checkpoint_if_cancelled()
        if not result.ok:
            raise SubagentError(result.error_message)
        return AgentToolResult(
            [TextContent(_answer_text(result, typed))],
            list(result.messages),
            usage=result.usage,
            nested_calls=nested_calls_of(result.messages),
        )

    async def _run(
        self,
        child: Agent,
        args: dict[str, Any],
        path: tuple[str, ...],
        on_update: ToolUpdateCallback,
    ) -> RunResult:
        prompt = args["task"] if self.task_prompt else json.dumps(args, ensure_ascii=False)
        unsubscribe = child.subscribe(_Forward(path, on_update)) if self.forward_events else None
        parent = CURRENT_RUN_CONTROL.get()
        if parent is not None:
            child._serves = (parent, self.share_limits)
        token = _PATH.set(path)
        try:
            return await run_as_child(child, lambda: child.prompt(prompt))
        finally:
            _PATH.reset(token)
            child._serves = None
            if unsubscribe is not None:
                unsubscribe()


def _answer_text(result: RunResult, typed: bool) -> str:
    """The child's answer for the parent: its typed answer as JSON when it gave one (an Agent
    with an ``output_type``, ``typed``), else its reply's text."""
    given = given_output(result.messages) if typed else None
    if given is None:
        return result.text
    return json.dumps(given.details, ensure_ascii=False)


@asynccontextmanager
async def _entered(made: object) -> AsyncIterator[Agent]:
    """The child a factory gave; a context manager it gave is entered and exited around the run
    (in the call's task, so that the scopes it opens nest inside the call's)."""
    if isinstance(made, AbstractAsyncContextManager):
        async with made as child:
            yield _checked_agent(child)
    else:
        yield _checked_agent(made)


def _checked_agent(made: object) -> Agent:
    if not isinstance(made, Agent):
        raise TypeError(f"a sub-agent factory must give an Agent, not {type(made).__name__}")
    return made


MAX_NESTED_CALLS: Final = 100
"""The most calls of a child a result records; more make the record incomplete."""
MAX_NESTED_ARGUMENTS_BYTES: Final = 1024
"""Arguments longer than this as JSON are left out of the record, their size kept."""
MAX_NESTED_ERROR_CHARS: Final = 200


def nested_calls_of(messages: Sequence[AgentMessage]) -> dict[str, Any] | None:
    """The record of the tool calls a child's run made, in the shape a tool result carries:
    ``{"calls": [{"id", "name", "arguments" or "argumentsBytes", "status", "durationMs"?,
    "error"?}], "complete": bool}``; ``None`` when it made none.

    A call without a result is ``"unfinished"``. The record is bounded: past
    :data:`MAX_NESTED_CALLS` calls, or with arguments left out, it is not complete.
    """
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    calls: list[dict[str, Any]] = []
    complete = True
    for message in messages:
        if not isinstance(message, AssistantMessage):
            continue
        for block in message.content:
            if not isinstance(block, ToolCall):
                continue
            if len(calls) == MAX_NESTED_CALLS:
                complete = False
                break
            record, whole = _nested_call(block, results.get(block.id))
            calls.append(record)
            complete = complete and whole
    return {"calls": calls, "complete": complete} if calls else None


def _nested_call(call: ToolCall, result: ToolResultMessage | None) -> tuple[dict[str, Any], bool]:
    """One call's record, and whether it is whole (finished, its arguments kept)."""
    record: dict[str, Any] = {"id": call.id, "name": call.name}
    arguments = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
    size = len(arguments.encode())
    kept = size <= MAX_NESTED_ARGUMENTS_BYTES
    if kept:
        record["arguments"] = call.arguments
    else:
        record["argumentsBytes"] = size
    if result is None:
        record["status"] = "unfinished"
        return record, False
    record["status"] = "error" if result.is_error else "ok"
    if result.duration_ms is not None:
        record["durationMs"] = result.duration_ms
    if result.is_error:
        text = " ".join(b.text for b in result.content if isinstance(b, TextContent))
        record["error"] = clip(text, MAX_NESTED_ERROR_CHARS)
    return record, kept


class _Forward:
    """The child's listener: each event to the parent as a progress update of the call.

    A grandchild's event reaches the child as an update already carrying a
    :class:`SubagentEvent`, with its full path: it is passed on as it is.
    """

    __slots__ = ("on_update", "path")

    def __init__(self, path: tuple[str, ...], on_update: ToolUpdateCallback) -> None:
        self.path = path
        self.on_update = on_update

    def __call__(self, event: AgentEvent) -> None:
        if type(event) is ToolExecutionUpdate:
            nested = event.partial_result.details
            if type(nested) is SubagentEvent:
                self.on_update(event.partial_result)
                return
        self.on_update(AgentToolResult([], SubagentEvent(self.path, event)))


async def run_as_child(agent: Agent, run: Callable[[], Awaitable[RunResult]]) -> RunResult:
    """Await ``run()`` (a run of ``agent``) so that a cancellation of the caller aborts it.

    The run is shielded from the caller's cancellation and aborted by it instead, so it closes
    out (every tool call answered, ``agent_end`` sent) before the cancellation goes on, at the
    caller's next checkpoint.
    """
    watcher = _AbortOnCancel(agent)
    async with anyio.create_task_group() as group:
        await group.start(watcher.watch)
        with anyio.CancelScope(shield=True):
            result = await run()
        watcher.done = True
        group.cancel_scope.cancel()
    return result


class _AbortOnCancel:
    """A task that waits until it is cancelled, then aborts ``agent`` (unless its run is done)."""

    __slots__ = ("agent", "done")

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.done = False

    async def watch(self, *, task_status: TaskStatus[None]) -> None:
        try:
            task_status.started()
            await anyio.sleep_forever()
        finally:
            if not self.done:
                self.agent.abort()
