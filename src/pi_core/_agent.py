"""The Agent: a stateful facade over the loop, with queues, listeners and an abortable run.

The Agent starts no background task: a run lives inside the awaited :meth:`Agent.prompt` or
:meth:`Agent.continue_`. ``steer``, ``follow_up`` and ``abort`` may be called from any other task
of the same event loop (from another thread, through ``anyio.from_thread.run_sync``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Generic, TypeAlias, TypeVar, overload

import anyio
import anyio.lowlevel
import attrs

from ._approvals import Decision, pending_tool_calls, unanswered_calls
from ._compacting import AgentCompactor
from ._compaction import Compaction, CompactionPolicy
from ._events import AgentEnd, AgentEvent, MessageEnd, MessageStart, TurnEnd
from ._exceptions import AgentBusyError, OutputError
from ._hooks import (
    AfterToolCall,
    AgentLoopConfig,
    BeforeToolCall,
    ConvertToLlm,
    FinishTurn,
    GetApiKey,
    PrepareNextTurn,
    PrepareRequest,
    ShouldStopAfterTurn,
    ToolExecution,
    TransformContext,
    default_convert_to_llm,
)
from ._limits import RunLimits
from ._listeners import AgentListener, AwaitingListener, as_awaiting_listener
from ._log import log_run_failure
from ._loop import check_held_decisions, run_loop
from ._maybe_async import READY
from ._messages import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    TextContent,
    ThinkingLevel,
    UserMessage,
    failed_reply,
    now_ms,
)
from ._model_name import as_model
from ._options import StreamFn, StreamOptions, StreamResult
from ._output import OutputSpec
from ._queue import MessageQueue, QueueMode, check_queue_mode
from ._registry import stream_simple
from ._result import RunOutcome, RunResult
from ._run_control import RunControl
from ._state import READ_ONLY_PROMPT_TEXT, AgentState
from ._texts import deadline_exceeded_text, exception_text
from ._tools import AgentTool
from ._tracer import RunTracer
from .nursery import AbortController, AbortSignal

__all__ = ["Agent", "AgentListener"]

BUSY_PROMPT_TEXT = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)
BUSY_CONTINUE_TEXT = "Agent is already processing. Wait for completion before continuing."
BUSY_RESET_TEXT = "Agent is already processing. Wait for completion before resetting."
INTERRUPTED_TEXT = "Tool execution was interrupted"
"""The result the Agent keeps for a tool call its run was interrupted in (no events sent)."""

DEFAULT_MODEL = Model("unknown", input=())
NO_MODEL_TEXT = "No model: give Agent(model=...)"
"""The error of a model call of an Agent given no model, with the default ``stream_fn``."""

T = TypeVar("T")

_AGENTS: Final[Any] = object()
"""``output_type`` not given for a run: the Agent's own."""


class _LoopSetting(Generic[T]):
    """An Agent attribute kept in the Agent's loop settings: a bad value raises at assignment."""

    __slots__ = ("_name",)

    def __set_name__(self, owner: type[Agent], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, agent: None, owner: type[Agent]) -> _LoopSetting[T]: ...
    @overload
    def __get__(self, agent: Agent, owner: type[Agent]) -> T: ...
    def __get__(self, agent: Agent | None, owner: type[Agent]) -> _LoopSetting[T] | T:
        if agent is None:
            return self
        value: T = agent._settings[self._name]
        return value

    def __set__(self, agent: Agent, value: T) -> None:
        """Raises ``ValueError`` for a value the loop config refuses."""
        agent._settings = _checked({**agent._settings, self._name: value})


def _checked(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings``, once ``AgentLoopConfig``'s validators have accepted them (``ValueError``)."""
    AgentLoopConfig(DEFAULT_MODEL, **settings)
    return settings


_Parent: TypeAlias = tuple[RunControl, bool]
"""The run a sub-agent's runs serve, and whether they share its limits."""


class _ActiveRun:
    __slots__ = ("_idle", "control", "controller", "signal", "skip_steering_poll")

    def __init__(
        self, skip_steering_poll: bool, limits: RunLimits | None, parent: _Parent | None
    ) -> None:
        self.controller = AbortController()
        self.signal = self.controller.signal
        if parent is None:
            self.control = RunControl(self.controller.abort, limits)
        else:
            self.control = RunControl(self.controller.abort, limits, *parent)
        self.skip_steering_poll = skip_steering_poll
        self._idle: anyio.Event | None = None  # made for the first waiter: most runs have none

    async def wait_until_settled(self) -> None:
        if self._idle is None:
            self._idle = anyio.Event()
        await self._idle.wait()

    def settled(self) -> None:
        if self._idle is not None:
            self._idle.set()


class Agent:
    """A stateful agent: prompt it, steer it, queue follow-ups, listen to it, abort it.

    Every option is keyword-only, and also a read-write attribute, read when a run starts. A bad
    value (``max_parallel_tools=0``, an unknown ``tool_execution`` or queue mode) raises
    ``ValueError`` where it is given, in the constructor or in the assignment.

    Args:
        system_prompt: the system prompt: with ``tools``, the leading system message of the
            transcript (unless ``messages`` starts with one). The transcript owns it from then
            on: ``agent.system_prompt`` is read from it, and a :class:`SystemMessage` sent
            through :meth:`prompt`, :meth:`steer` or :meth:`follow_up` changes it.
        model: the :class:`Model` to call, or its name in the catalogue, ``"provider/id"``
            (``"openai/gpt-4o-mini"``, see :mod:`pi_core.models`; an unknown name raises
            ``ModelNotFoundError`` at once); its ``api`` picks the provider of ``stream_fn``.
            Without one, a run with the default ``stream_fn`` fails: ``No model: give
            Agent(model=...)``.
        thinking_level: ``"off"``, ``"minimal"`` … ``"xhigh"``: the reasoning asked of a model
            that can reason.
        tools: the :class:`AgentTool` objects (``@tool`` functions) the model may call; a run
            declares how they differ from what the transcript declares in a system message,
            before its next request (so assigning ``agent.tools`` takes effect at the next run).
        messages: a transcript to start from.
        stream_fn: talks to the model; the default, :func:`stream_simple`, dispatches to the
            provider registered for ``model.api``.
        convert_to_llm: turns the transcript into the messages the model sees, at every call
            (the default keeps system, user, assistant and toolResult messages; one of your
            own must keep the system messages, which carry the prompt and the tools).
        transform_context: rewrites the transcript before ``convert_to_llm`` (pruning,
            summarising, injecting context).
        get_api_key: ``get_api_key(provider)`` returns the key for each call (short-lived
            tokens); ``None`` uses ``options.api_key`` or the environment.
        before_tool_call: sees each validated call and may block it.
        after_tool_call: sees each result and may replace its content, details or error flag.
        finish_turn: after a turn's tool calls, before its ``turn_end``: a
            :class:`TurnDecision` ends the run (``"end"``, the queues untouched) or asks for one
            more request (``"continue"``).
        prepare_next_turn: when another turn follows, before it starts: may replace the
            context, the model or the thinking level, and add messages to that turn.
        prepare_request: before every model request: may replace the context, the model or the
            thinking level from that request on.
        should_stop_after_turn: after each turn's ``turn_end``, returning ``True`` ends the run.
        steering_mode: ``"one-at-a-time"`` or ``"all"``: how many queued steering messages
            are injected at each poll.
        follow_up_mode: the same, for follow-up messages.
        tool_execution: ``"parallel"`` (the calls of one reply run at once) or
            ``"sequential"``.
        max_parallel_tools: caps how many calls of a parallel batch run at once.
        max_tool_calls_per_reply: how many tool calls of one reply run (default 10 000);
            each call past them gets an error result. ``None``: no limit.
        limits: what each run may spend (:class:`RunLimits`: turns, tokens, dollars,
            seconds); a reached limit ends the run, and ``RunResult.stopped_by`` says which.
        session_id: sent to providers as a prompt-cache and affinity key.
        thinking_budgets: token budgets per thinking level, overriding a provider's defaults.
        options: the :class:`StreamOptions` of every model call (key, temperature, timeout,
            retries …); ``thinking_level``, ``session_id`` and ``thinking_budgets`` override
            their fields.
        clock: milliseconds since the epoch, for the timestamps of the messages the Agent makes.
        tracer: traces every run (see :mod:`pi_core.tracing`).
        interruptions: exception types a run lets pass unchanged instead of turning them into an
            error result, an error reply or a failure message (an execution engine's "stop").
        compaction: a :class:`CompactionPolicy`: before a request whose estimated context passes
            its threshold of the model's context window, and once after a request refused as too
            long, the Agent replaces the older part of its transcript by a summary (see
            :mod:`pi_core.sessions`). ``None``: never.
        output_type: the type of a typed answer (an attrs class, a dataclass, a TypedDict, an
            Enum, ``list[...]``, a union … anything ``@tool`` takes as a parameter type, or a
            JSON Schema dict): the model answers by calling the ``final_result`` tool, the value
            is validated and structured, and is ``RunResult.output``. ``None`` or ``str``: a
            plain text answer. ``prompt(..., output_type=...)`` sets it for one run.
        output_retries: how many more answers the model may give after an invalid one, or a
            reply without one; the last retry forces the tool. Spent, the run fails with
            :class:`OutputError`.
    """

    def __init__(
        self,
        *,
        system_prompt: str = "",
        model: Model | str = DEFAULT_MODEL,
        thinking_level: ThinkingLevel = "off",
        tools: Iterable[AgentTool] = (),
        messages: Iterable[AgentMessage] = (),
        # --- generated by scripts/loop_settings.py from AgentLoopConfig: parameters ---
        stream_fn: StreamFn = stream_simple,
        convert_to_llm: ConvertToLlm = default_convert_to_llm,
        transform_context: TransformContext | None = None,
        get_api_key: GetApiKey | None = None,
        finish_turn: FinishTurn | None = None,
        should_stop_after_turn: ShouldStopAfterTurn | None = None,
        prepare_next_turn: PrepareNextTurn | None = None,
        prepare_request: PrepareRequest | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        tool_execution: ToolExecution = "parallel",
        max_parallel_tools: int | None = None,
        max_tool_calls_per_reply: int | None = 10_000,
        limits: RunLimits | None = None,
        tracer: RunTracer | None = None,
        interruptions: tuple[type[BaseException], ...] = (),
        # --- end of the generated parameters ---
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        session_id: str | None = None,
        thinking_budgets: Mapping[str, int] | None = None,
        options: StreamOptions | None = None,
        clock: Callable[[], int] = now_ms,
        compaction: CompactionPolicy | None = None,
        output_type: Any = None,
        output_retries: int = 2,
    ) -> None:
        self._state = AgentState(system_prompt, as_model(model), thinking_level, tools, messages)
        # The hooks and tool settings, as AgentLoopConfig takes them: its validators check every
        # value, at construction and on every assignment (see _LoopSetting); each run's config
        # is made of them and the model, the queues and the options of that run.
        self._settings = _checked(
            {
                # --- generated by scripts/loop_settings.py from AgentLoopConfig: settings ---
                "stream_fn": stream_fn,
                "convert_to_llm": convert_to_llm,
                "transform_context": transform_context,
                "get_api_key": get_api_key,
                "finish_turn": finish_turn,
                "should_stop_after_turn": should_stop_after_turn,
                "prepare_next_turn": prepare_next_turn,
                "prepare_request": prepare_request,
                "before_tool_call": before_tool_call,
                "after_tool_call": after_tool_call,
                "tool_execution": tool_execution,
                "max_parallel_tools": max_parallel_tools,
                "max_tool_calls_per_reply": max_tool_calls_per_reply,
                "limits": limits,
                "tracer": tracer,
                "interruptions": interruptions,
                # --- end of the generated settings ---
            }
        )
        self.session_id = session_id
        self.thinking_budgets = thinking_budgets
        self.options = options
        self.clock = clock
        """Milliseconds since the epoch: stamps the messages the Agent and its runs make."""
        self._steering = MessageQueue(steering_mode)
        self._follow_ups = MessageQueue(follow_up_mode)
        # Each listener as subscribed -> as the run calls it, with (event, signal).
        self._listeners: dict[AgentListener, AwaitingListener] = {}
        self._listener_tuple: tuple[AwaitingListener, ...] = ()  # what a run iterates, per event
        self._active: _ActiveRun | None = None
        self._serves: _Parent | None = None
        """Set while this Agent runs as a sub-agent (see ``agent_tool``)."""
        # Made only for an Agent that compacts or is watched for compactions: others pay nothing.
        self._compactor: AgentCompactor | None = None
        if compaction is not None:
            self.compaction = compaction
        self._output = OutputSpec.of(output_type, output_retries)
        self._output_type: Any = output_type
        self._output_retries = output_retries

    # --- generated by scripts/loop_settings.py from AgentLoopConfig: attributes ---
    stream_fn: _LoopSetting[StreamFn] = _LoopSetting()
    convert_to_llm: _LoopSetting[ConvertToLlm] = _LoopSetting()
    transform_context: _LoopSetting[TransformContext | None] = _LoopSetting()
    get_api_key: _LoopSetting[GetApiKey | None] = _LoopSetting()
    finish_turn: _LoopSetting[FinishTurn | None] = _LoopSetting()
    should_stop_after_turn: _LoopSetting[ShouldStopAfterTurn | None] = _LoopSetting()
    prepare_next_turn: _LoopSetting[PrepareNextTurn | None] = _LoopSetting()
    prepare_request: _LoopSetting[PrepareRequest | None] = _LoopSetting()
    before_tool_call: _LoopSetting[BeforeToolCall | None] = _LoopSetting()
    after_tool_call: _LoopSetting[AfterToolCall | None] = _LoopSetting()
    tool_execution: _LoopSetting[ToolExecution] = _LoopSetting()
    max_parallel_tools: _LoopSetting[int | None] = _LoopSetting()
    max_tool_calls_per_reply: _LoopSetting[int | None] = _LoopSetting()
    limits: _LoopSetting[RunLimits | None] = _LoopSetting()
    tracer: _LoopSetting[RunTracer | None] = _LoopSetting()
    interruptions: _LoopSetting[tuple[type[BaseException], ...]] = _LoopSetting()
    # --- end of the generated attributes ---

    # --- state ----------------------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """The live state: transcript, tools, streaming message, pending tool calls, last error."""
        return self._state

    @property
    def system_prompt(self) -> str:
        """The system prompt the transcript declares (read-only: see ``state.system_prompt``)."""
        return self._state.system_prompt

    @system_prompt.setter
    def system_prompt(self, _value: str) -> None:
        raise AttributeError(READ_ONLY_PROMPT_TEXT)

    @property
    def model(self) -> Model:
        """The model; assign a :class:`Model` or a catalogue name, ``"provider/id"``."""
        return self._state.model

    @model.setter
    def model(self, value: Model | str) -> None:
        self._state.model = as_model(value)

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self._state.thinking_level

    @thinking_level.setter
    def thinking_level(self, value: ThinkingLevel) -> None:
        self._state.thinking_level = value

    @property
    def tools(self) -> list[AgentTool]:
        return self._state.tools

    @tools.setter
    def tools(self, value: Iterable[AgentTool]) -> None:
        self._state.tools = value

    @property
    def messages(self) -> list[AgentMessage]:
        return self._state.messages

    @messages.setter
    def messages(self, value: Iterable[AgentMessage]) -> None:
        self._state.messages = value

    @property
    def steering_mode(self) -> QueueMode:
        """How steering is drained: ``"one-at-a-time"`` (one message per turn) or ``"all"``."""
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering.mode = check_queue_mode(mode)

    @property
    def follow_up_mode(self) -> QueueMode:
        """How follow-ups are drained: ``"one-at-a-time"`` or ``"all"``."""
        return self._follow_ups.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_ups.mode = check_queue_mode(mode)

    @property
    def output_type(self) -> Any:
        """The type of every run's typed answer (``None``: plain text); a type ``@tool`` cannot
        express raises ``TypeError`` at assignment."""
        return self._output_type

    @output_type.setter
    def output_type(self, value: Any) -> None:
        self._output = OutputSpec.of(value, self._output_retries)
        self._output_type = value

    @property
    def output_retries(self) -> int:
        """How many more answers the model may give after an invalid one."""
        return self._output_retries

    @output_retries.setter
    def output_retries(self, value: int) -> None:
        self._output = OutputSpec.of(self._output_type, value)
        self._output_retries = value

    @property
    def compaction(self) -> CompactionPolicy | None:
        """When the Agent compacts its transcript by itself (``None``: never)."""
        return self._compactor.policy if self._compactor is not None else None

    @compaction.setter
    def compaction(self, policy: CompactionPolicy | None) -> None:
        self._compacting().policy = policy

    def on_compaction(self, callback: Callable[[Compaction], object]) -> Callable[[], bool]:
        """Call ``callback(compaction)`` each time the Agent has compacted its transcript (it is
        called at once, with the transcript already replaced; what it returns is ignored).

        Returns:
            The function that stops the calls; it returns whether they were still on.
        """
        return self._compacting().add_callback(callback)

    def _compacting(self) -> AgentCompactor:
        if self._compactor is None:
            self._compactor = AgentCompactor(self, None)
        return self._compactor

    @property
    def signal(self) -> AbortSignal | None:
        """The running run's abort signal, or ``None`` when idle."""
        return self._active.signal if self._active is not None else None

    # --- queues and listeners -------------------------------------------------------------------

    def steer(self, message: AgentMessage | str) -> None:
        """Queue a message to inject after the current turn's tool calls finish."""
        self._steering.enqueue(_as_message(message, self.clock))

    def follow_up(self, message: AgentMessage | str) -> None:
        """Queue a message to inject when the agent would otherwise stop."""
        self._follow_ups.enqueue(_as_message(message, self.clock))

    def clear_steering_queue(self) -> None:
        """Drop every queued steering message."""
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        """Drop every queued follow-up message."""
        self._follow_ups.clear()

    def clear_all_queues(self) -> None:
        """Drop every queued steering and follow-up message."""
        self._steering.clear()
        self._follow_ups.clear()

    def has_queued_messages(self) -> bool:
        """True if a steering or follow-up message is waiting."""
        return bool(self._steering) or bool(self._follow_ups)

    def peek_queued_messages(self) -> list[AgentMessage]:
        """What the next drain would take, without taking it: the queued steering messages
        (all of them, or the oldest, as ``steering_mode`` says), else the follow-ups."""
        steering = self._steering.peek()
        return steering if steering else self._follow_ups.peek()

    def subscribe(self, listener: AgentListener) -> Callable[[], bool]:
        """Call ``listener(event, signal)`` (or ``listener(event)``) for every event.

        Listeners are awaited in subscription order after the state has been updated for the
        event; subscribing the same function twice adds it once. A listener may be sync or
        async; what a sync one returns is ignored. A listener that raises fails the run (see
        "Listeners" in the concepts).

        Returns:
            The unsubscribe function; it returns whether the listener was still subscribed.

        Raises:
            TypeError: ``listener`` cannot be called with ``(event)`` or ``(event, signal)``.
        """
        self._listeners[listener] = as_awaiting_listener(listener)
        self._listener_tuple = tuple(self._listeners.values())

        def unsubscribe() -> bool:
            present = self._listeners.pop(listener, _MISSING) is not _MISSING
            self._listener_tuple = tuple(self._listeners.values())
            return present

        return unsubscribe

    # --- runs -----------------------------------------------------------------------------------

    async def prompt(
        self,
        message: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
        *,
        output_type: Any = _AGENTS,
    ) -> RunResult:
        """Run the agent on a prompt: text (with optional images), a message or a list of them.

        Returns when the run has fully settled. A failure of the run is not raised: it is in the
        result (and in ``state.error_message``); ``result.raise_for_error()`` raises it.

        Args:
            output_type: the type of this run's typed answer, instead of the Agent's
                ``output_type`` (``None``: plain text); ``RunResult.output`` is the value.

        Returns:
            The run's outcome: its new messages, its reply and text, its error if any.

        Raises:
            AgentBusyError: a run is active.
            ValueError: tool calls are waiting for a decision (:meth:`resolve` them first).
            TypeError: an ``output_type`` that ``@tool`` cannot express.
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_PROMPT_TEXT)
        self._refuse_while_held("prompt")
        output = (
            self._output
            if output_type is _AGENTS
            else OutputSpec.of(output_type, self._output_retries)
        )
        return await self._run(_as_prompts(message, images, self.clock), output=output)

    async def continue_(self) -> RunResult:
        """Continue from the current transcript (after a tool result, a user message, or an abort).

        From an assistant tail it injects queued steering (else follow-ups) as a new prompt.
        Returns the run's outcome, as :meth:`prompt` does.

        Raises:
            AgentBusyError: a run is active.
            ValueError: no messages, an assistant tail with nothing queued, or tool calls
                waiting for a decision (:meth:`resolve` them first).
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_CONTINUE_TEXT)
        self._refuse_while_held("continue")
        messages = self._state.messages
        if all(message.role == "system" for message in messages):
            raise ValueError("No messages to continue from")
        if messages[-1].role != "assistant":
            return await self._run(())  # no prompts: continue from the transcript
        steering = self._steering.drain()
        if steering:
            return await self._run(steering, skip_initial_steering_poll=True)
        follow_ups = self._follow_ups.drain()
        if follow_ups:
            return await self._run(follow_ups)
        raise ValueError("Cannot continue from message role: assistant")

    async def resolve(self, decisions: Mapping[str, Decision]) -> RunResult:
        """Decide the tool calls held for approval (``state.pending_approvals``), then go on.

        ``decisions`` maps each held call's id to :class:`Approve` or :class:`Deny`. An approved
        call runs as any call does (its events, ``before_tool_call``, the limits); a denied one
        is answered ``Tool call denied`` (``Tool call denied: <reason>``); then the run makes
        its next request. The held calls are read from the transcript, so an Agent given a
        transcript saved while calls waited resolves them as well.

        Returns:
            The run's outcome, as :meth:`prompt` returns it.

        Raises:
            AgentBusyError: a run is active.
            ValueError: nothing is held, a held call has no decision, a decision names a call
                that is not held, or a value is not an ``Approve()`` or ``Deny(...)``.
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_CONTINUE_TEXT)
        checked = check_held_decisions(decisions, self._state.pending_approvals)
        return await self._run((), decisions=checked)

    def stop(self, *, grace: float | None = None) -> None:
        """End the active run gracefully: it finishes its current step (the streaming reply,
        then that reply's tool calls) and ends before its next request; queued steering and
        follow-up messages stay queued. A no-op when idle; never raises.

        Args:
            grace: seconds after which the stop becomes :meth:`abort`.
        """
        if self._active is not None:
            self._active.control.stop(grace)

    def abort(self, reason: object = None) -> None:
        """Abort the active run (a no-op when idle); never raises."""
        if self._active is not None:
            self._active.controller.abort(reason)

    async def wait_for_idle(self) -> None:
        """Wait until the active run (if any) has settled, ``agent_end`` listeners included."""
        if self._active is None:
            await anyio.lowlevel.checkpoint()
            return
        await self._active.wait_until_settled()

    async def compact(self, instructions: str | None = None) -> Compaction:
        """Compact the transcript now: the model summarises its older part, which the summary
        replaces (the most recent messages stay, as the policy's ``keep_recent_tokens`` says;
        without a policy, the defaults of :class:`CompactionPolicy`). ``abort()`` stops it.

        Args:
            instructions: added to the summary request (what else the summary must keep).

        Raises:
            AgentBusyError: a run is active.
            CompactionError: nothing to compact, or the summary request failed or was aborted.
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_CONTINUE_TEXT)
        active = self._active = _ActiveRun(False, None, self._serves)
        try:
            return await self._compacting().compact_now(
                instructions, self._loop_config(), active.signal
            )
        finally:
            self._active = None
            active.settled()

    def reset(self) -> None:
        """Forget the conversation, the queues and the run state. The system prompt and the
        tools the transcript declares stay, as one system message.

        Raises:
            AgentBusyError: a run is active.
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_RESET_TEXT)
        self._state._reset()
        self.clear_all_queues()

    # --- the run lifecycle ----------------------------------------------------------------------

    def _refuse_while_held(self, what: str) -> None:
        held = unanswered_calls(self._state.messages)
        if held:
            ids = ", ".join(repr(call.id) for call in held)
            raise ValueError(
                f"Cannot {what}: tool calls are waiting for a decision ({ids}); resolve() them first"
            )

    async def _run(
        self,
        prompts: Sequence[AgentMessage],
        *,
        skip_initial_steering_poll: bool = False,
        decisions: Mapping[str, Decision] | None = None,
        output: OutputSpec | object | None = _AGENTS,
    ) -> RunResult:
        """Run the loop on ``prompts``, or continue from the transcript when there are none
        (after deciding its held calls, with ``decisions``), asking for the typed answer of
        ``output`` (by default the Agent's)."""
        spec = self._output if output is _AGENTS else output
        assert spec is None or isinstance(spec, OutputSpec)
        limits = self._settings["limits"]
        active = self._active = _ActiveRun(skip_initial_steering_poll, limits, self._serves)
        self._state._start_run()
        try:
            try:
                config = self._loop_config(spec)
                compactor = self._compactor
                if compactor is not None and compactor.policy is not None:
                    new = await compactor.run(prompts, config, active, decisions)
                else:  # the loop called directly: one coroutine less per run
                    state = self._state
                    context = AgentContext("", state.messages, list(state.tools))
                    new = await run_loop(
                        prompts,
                        context,
                        config,
                        self._process_event,
                        active.signal,
                        active.control,
                        decisions,
                    )
            except Exception as exc:
                # An engine's interruption passes; after agent_end (a listener raised there)
                # nothing may follow, so there is no failure lifecycle either.
                if isinstance(exc, self.interruptions) or self._state._run_ended:
                    raise
                if isinstance(exc, OutputError):  # the run's messages stay its messages
                    failure = await self._handle_run_failure(exc, active.signal, exc.result)
                    new = [*exc.result.messages, failure]
                    return self._result(new, active.control, output_failed=True)
                new = [await self._handle_run_failure(exc, active.signal)]
            except BaseException as exc:
                # KeyboardInterrupt, the host's cancellation: propagate, sending no events, but
                # keep a transcript in which every tool call has a result.
                self._state._answer_open_calls(f"{INTERRUPTED_TEXT} ({type(exc).__name__})")
                raise
            return self._result(new, active.control, spec)
        finally:
            self._state._finish_run()
            self._active = None
            active.settled()

    def _result(
        self,
        new: list[AgentMessage],
        control: RunControl,
        output: OutputSpec | None = None,
        *,
        output_failed: bool = False,
    ) -> RunResult:
        """The result of a run that ended: its outcome, the limit that ended it, what it holds,
        the typed answer it gave."""
        state = self._state
        outcome, stopped_by = state._outcome, control.stopped_by
        if stopped_by is not None and stopped_by.kind == "deadline":
            state._error_message = deadline_exceeded_text(stopped_by.limit)
        held = pending_tool_calls(state.messages, state.tools) if outcome is RunOutcome.DONE else []
        if held:
            outcome = RunOutcome.PENDING
        elif stopped_by is not None and outcome in (RunOutcome.DONE, RunOutcome.ABORTED):
            outcome = RunOutcome.LIMIT
        state._outcome = outcome
        value = None if output is None else output.output_of(new)
        return RunResult(
            new,
            state.error_message,
            outcome,
            stopped_by,
            pending=held,
            output=value,
            output_failed=output_failed,
        )

    async def _run_loop(
        self,
        prompts: Sequence[AgentMessage],
        config: AgentLoopConfig,
        active: _ActiveRun,
        decisions: Mapping[str, Decision] | None = None,
    ) -> list[AgentMessage]:
        # The loop works on a copy of the messages; the tools are copied here, since a hook may
        # change the context's list in place.
        state = self._state
        context = AgentContext("", state.messages, list(state.tools))
        return await run_loop(
            prompts, context, config, self._process_event, active.signal, active.control, decisions
        )

    async def _handle_run_failure(
        self, exc: Exception, signal: AbortSignal, ended: RunResult | None = None
    ) -> AssistantMessage:
        """Close out a run that raised: the failure message gets the full event lifecycle
        (``agent_end`` lists the messages of ``ended``, a run that ended by raising, first)."""
        log_run_failure(exc)
        model = self._state.model
        reason: StopReason = "aborted" if signal.aborted else "error"
        text = exception_text(exc)
        failure = failed_reply(model, reason, text, [TextContent("")], timestamp=self.clock())
        for event in (
            MessageStart(failure),
            MessageEnd(failure),
            TurnEnd(failure, []),
            AgentEnd([failure] if ended is None else [*ended.messages, failure]),
        ):
            await self._process_event(event)
        return failure

    def _loop_config(self, output: OutputSpec | None = None) -> AgentLoopConfig:
        model, settings = self._state.model, self._settings
        if model is DEFAULT_MODEL and settings["stream_fn"] is stream_simple:
            # No provider serves the placeholder: say what is missing instead.
            settings = {**settings, "stream_fn": _no_model}
        compactor = self._compactor
        if compactor is not None and compactor.policy is not None:
            settings = {**settings, "prepare_next_turn": compactor.next_turn_hook(settings)}
        return AgentLoopConfig(
            model,
            get_steering_messages=self._poll_steering,
            get_follow_up_messages=self._follow_ups.drain,
            options=self._stream_options(),
            clock=self.clock,
            output=output,
            **settings,
        )

    def _poll_steering(self) -> list[AgentMessage]:
        active = self._active
        if active is not None and active.skip_steering_poll:
            active.skip_steering_poll = False  # steering already drained into the prompt
            return []
        return self._steering.drain()

    def _stream_options(self) -> StreamOptions:
        base = self.options if self.options is not None else _NO_OPTIONS
        level = self._state.thinking_level
        reasoning = None if level == "off" else level
        session_id = self.session_id if self.session_id is not None else base.session_id
        budgets = (
            self.thinking_budgets if self.thinking_budgets is not None else base.thinking_budgets
        )
        if (
            reasoning == base.reasoning
            and session_id == base.session_id
            and budgets is base.thinking_budgets
        ):
            return base
        return attrs.evolve(
            base, reasoning=reasoning, session_id=session_id, thinking_budgets=budgets
        )

    def _process_event(self, event: AgentEvent) -> Awaitable[None]:
        """Reduce the state for the event; what the run awaits then calls every listener in order.

        With one listener (the usual case) that is the listener's own awaitable: the run awaits
        it directly, one coroutine less for every event.
        """
        active = self._active
        if active is None:  # a run's emit outliving the run: upstream's guard, kept
            raise RuntimeError("Agent listener invoked outside active run")
        signal = active.signal
        self._state._reduce(event, signal)
        listeners = self._listener_tuple
        if len(listeners) == 1:
            return listeners[0](event, signal)
        return _notify(listeners, event, signal) if listeners else READY


async def _notify(
    listeners: tuple[AwaitingListener, ...], event: AgentEvent, signal: AbortSignal
) -> None:
    for listener in listeners:
        returned = listener(event, signal)
        if returned is not READY:  # a sync listener's plain value: nothing to wait for
            await returned


def _no_model(_model: Model, _context: Context, _options: StreamOptions) -> StreamResult:
    """The stream function of an Agent given no model: the model call fails, saying so."""
    raise ValueError(NO_MODEL_TEXT)


_MISSING: Final = object()
_NO_OPTIONS = StreamOptions()


def _as_message(message: AgentMessage | str, clock: Callable[[], int]) -> AgentMessage:
    if isinstance(message, str):
        return UserMessage([TextContent(message)], clock())
    return message


def _as_prompts(
    message: str | AgentMessage | Sequence[AgentMessage],
    images: Sequence[ImageContent] | None,
    clock: Callable[[], int],
) -> list[AgentMessage]:
    if isinstance(message, str):
        content: list[TextContent | ImageContent] = [TextContent(message)]
        content.extend(images or ())
        return [UserMessage(content, clock())]
    if isinstance(message, (list, tuple)):
        return list(message)
    return [message]  # type: ignore[list-item]
