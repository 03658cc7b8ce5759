"""A whole scripted run, and the harness that plays it against the loop or an Agent.

A :class:`RunScript` is plain data (hypothesis draws it, see :func:`scripted_runs`): the model's
replies turn by turn, what every tool call does, the tool mode and the order in which tool calls
are released. A :class:`ScriptedRun` builds fresh parts from it (a :class:`ScriptedStream`, a
:class:`ToolScript` releasing by itself, the tools), so one script can be played many times.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from .. import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ToolCall,
    ToolExecution,
    UserMessage,
    run_agent_loop,
)
from ..nursery import AbortController, AbortSignal
from ._stream import ScriptedStream, scripted_reply
from ._tools import CallBehaviour, ReleaseBatch, ToolScript

__all__ = [
    "CALL_OUTCOMES",
    "CONTROL_OUTCOMES",
    "TOOL_TIMEOUT",
    "CallOutcome",
    "CallScript",
    "RunRecord",
    "RunScript",
    "ScriptedRun",
    "TurnScript",
]

CallOutcome = Literal[
    "succeed", "terminate", "fail", "timeout", "unknown", "invalid", "blocked", "held"
]
"""How a scripted call ends. The first four execute (see :data:`ToolOutcome`); ``unknown`` calls
a tool that does not exist, ``invalid`` passes arguments that fail validation, ``blocked`` is
refused by ``before_tool_call``: those three end during preflight. ``held`` calls the tool
``gated``, whose calls wait for approval (they are not in :data:`CALL_OUTCOMES`, the default:
draw them with ``scripted_runs(outcomes=CONTROL_OUTCOMES)``)."""

CALL_OUTCOMES: tuple[CallOutcome, ...] = (
    "succeed",
    "terminate",
    "fail",
    "timeout",
    "unknown",
    "invalid",
    "blocked",
)
CONTROL_OUTCOMES: tuple[CallOutcome, ...] = (*CALL_OUTCOMES, "held")
"""Every outcome, calls held for approval included."""
_EXECUTED = frozenset(("succeed", "terminate", "fail", "timeout"))

TOOL_TIMEOUT = 0.002
"""Seconds: the timeout of the ``slow`` tool, the only wall time in a scripted run."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}
"""The schema of every scripted tool: an ``invalid`` call leaves out ``n``."""

StopReasonScript = Literal["toolUse", "stop", "length", "error"]


@attrs.frozen
class CallScript:
    """One tool call of a scripted reply."""

    id: str
    outcome: CallOutcome = "succeed"
    updates: int = 0
    """Progress updates before the call ends (only calls that execute send them)."""
    sequential: bool = False
    """Call the tool whose ``execution_mode`` is ``"sequential"``: the whole batch goes one by one."""

    @property
    def executes(self) -> bool:
        """Whether the call passes preflight and runs the tool."""
        return self.outcome in _EXECUTED

    @property
    def tool_name(self) -> str:
        """``missing`` (no such tool), ``slow`` (times out), ``gated`` (held for approval),
        ``serial`` or ``work``."""
        if self.outcome == "unknown":
            return "missing"
        if self.outcome == "held":
            return "gated"
        if self.outcome == "timeout":
            return "slow"
        return "serial" if self.sequential else "work"

    def tool_call(self) -> ToolCall:
        """The block of the assistant message."""
        return ToolCall(self.id, self.tool_name, {} if self.outcome == "invalid" else {"n": 1})

    def behaviour(self) -> CallBehaviour:
        """What the tool does when the call executes."""
        outcome = self.outcome if self.outcome in _EXECUTED else "succeed"
        return CallBehaviour(outcome, self.updates)  # type: ignore[arg-type]


@attrs.frozen
class TurnScript:
    """One reply of the model: some text, then tool calls."""

    calls: tuple[CallScript, ...] = ()
    stop_reason: StopReasonScript = "toolUse"
    """``error`` ends the run without running the calls; ``length`` answers every call as
    truncated without running it, and the run goes on; the others run them."""
    text: str = ""

    @property
    def runs_calls(self) -> bool:
        """Whether the loop runs this reply's calls at all: a ``length`` reply's are refused."""
        return self.stop_reason != "length"

    def reply(self) -> AssistantMessage:
        """The scripted assistant message."""
        content = ([self.text] if self.text else []) + [call.tool_call() for call in self.calls]
        return scripted_reply(*content, stop_reason=self.stop_reason)


@attrs.frozen
class RunScript:
    """A run: the replies turn by turn (then ``final_text`` for every further call), the tool
    mode, and the order in which the tool calls' steps are released."""

    turns: tuple[TurnScript, ...] = ()
    tool_execution: ToolExecution = "parallel"
    max_parallel_tools: int | None = None
    release_order: tuple[str, ...] = ()
    """Call ids, one entry per step (see :class:`ToolScript`); steps left out go in source
    order."""
    stream_checkpoints: bool = True
    """Whether the model yields to the event loop between events (see :class:`ScriptedStream`)."""
    final_text: str = "All done."

    @property
    def calls(self) -> tuple[CallScript, ...]:
        """Every tool call of every turn."""
        return tuple(call for turn in self.turns for call in turn.calls)

    def is_sequential(self, turn: TurnScript) -> bool:
        """Whether the batch of ``turn`` runs one call at a time."""
        return self.tool_execution == "sequential" or any(
            call.sequential and call.outcome not in ("unknown", "timeout", "held")
            for call in turn.calls
        )

    def release_batches(self) -> list[ReleaseBatch]:
        """What the :class:`ToolScript` needs to know to release by itself."""
        return [
            ReleaseBatch(
                tuple(call.id for call in turn.calls if call.executes and turn.runs_calls),
                1 if self.is_sequential(turn) else self.max_parallel_tools,
            )
            for turn in self.turns
        ]


@attrs.define
class RunRecord:
    """What one played run produced."""

    events: list[AgentEvent]
    messages: list[AgentMessage]
    """The run's new messages."""
    abort_at: int | None = None
    """The index of the event during which the run was aborted, if it was."""
    llm_calls_at_abort: int | None = None
    """How many model calls had been made when the abort happened."""

    @property
    def types(self) -> list[str]:
        """The event types, in order."""
        return [event.type for event in self.events]


class ScriptedRun:
    """Fresh parts for one play of ``script``: model, tools, their release, and the config.

    Attributes:
        stream: the :class:`ScriptedStream` answering the model calls.
        tool_script: the :class:`ToolScript` of every tool, releasing in the script's order.
        tools: the tools ``work``, ``serial`` (sequential mode), ``slow`` (times out after
            :attr:`tool_timeout` seconds) and ``gated`` (every call waits for approval; once
            approved it answers at once).
        gated_runs: the ids of the ``gated`` calls that executed, in order.
    """

    tool_timeout: ClassVar[float] = TOOL_TIMEOUT

    def __init__(self, script: RunScript) -> None:
        self.script: RunScript = script
        self.stream: ScriptedStream = ScriptedStream(
            [turn.reply() for turn in script.turns],
            default=scripted_reply(script.final_text),
            checkpoints=script.stream_checkpoints,
        )
        self.tool_script: ToolScript = ToolScript(
            {call.id: call.behaviour() for call in script.calls if call.executes},
            order=script.release_order,
            batches=script.release_batches(),
        )
        make = self.tool_script.tool
        self.tools: list[AgentTool] = [
            make("work", parameters=PARAMETERS),
            make("serial", parameters=PARAMETERS, execution_mode="sequential"),
            make("slow", parameters=PARAMETERS, timeout=TOOL_TIMEOUT),
            AgentTool("gated", "Needs approval.", PARAMETERS, self._gated, requires_approval=True),
        ]
        self.gated_runs: list[str] = []
        self._blocked = {call.id for call in script.calls if call.outcome == "blocked"}

    async def _gated(
        self, tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any
    ) -> str:
        self.gated_runs.append(tool_call_id)
        return f"gated {tool_call_id} ran"

    def before_tool_call(
        self, context: BeforeToolCallContext, signal: AbortSignal
    ) -> BeforeToolCallResult | None:
        """Blocks the calls scripted as ``blocked``."""
        if context.tool_call.id in self._blocked:
            return BeforeToolCallResult(block=True, reason=f"{context.tool_call.id} is blocked")
        return None

    def loop_config(self, **changes: Any) -> AgentLoopConfig:
        """The loop configuration of the script; ``changes`` override or add fields."""
        options: dict[str, Any] = {
            "stream_fn": self.stream,
            "before_tool_call": self.before_tool_call,
            "tool_execution": self.script.tool_execution,
            "max_parallel_tools": self.script.max_parallel_tools,
        }
        options.update(changes)
        return AgentLoopConfig(self.stream.model, **options)

    def agent(self, **options: Any) -> Agent:
        """An :class:`Agent` set up like :meth:`loop_config`; ``options`` override or add."""
        settings: dict[str, Any] = {
            "model": self.stream.model,
            "stream_fn": self.stream,
            "tools": self.tools,
            "before_tool_call": self.before_tool_call,
            "tool_execution": self.script.tool_execution,
            "max_parallel_tools": self.script.max_parallel_tools,
        }
        settings.update(options)
        return Agent(**settings)

    async def run(self, prompt: str = "Go.", *, abort_at: int | None = None) -> RunRecord:
        """Play the script with :func:`run_agent_loop`, aborting while event ``abort_at`` is
        being emitted (if the run gets that far)."""
        controller = AbortController()
        record = RunRecord([], [])

        def emit(event: AgentEvent) -> None:
            record.events.append(event)
            if len(record.events) - 1 == abort_at:
                record.abort_at = abort_at
                record.llm_calls_at_abort = self.stream.calls
                controller.abort("scripted abort")

        context = AgentContext("You are scripted.", [], list(self.tools))
        record.messages = await run_agent_loop(
            [UserMessage(prompt)], context, self.loop_config(), emit, signal=controller.signal
        )
        return record
