"""The Agent: a stateful facade over the loop, with queues, listeners and an abortable run.

The Agent starts no background task: a run lives inside the awaited :meth:`Agent.prompt` or
:meth:`Agent.continue_`. ``steer``, ``follow_up`` and ``abort`` may be called from any other task
of the same event loop (from another thread, through ``anyio.from_thread.run_sync``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar, overload

import anyio
import anyio.lowlevel
import attrs

from ._events import AgentEnd, AgentEvent, MessageEnd, MessageStart, TurnEnd
from ._exceptions import AgentBusyError
from ._hooks import (
    AfterToolCall,
    AgentLoopConfig,
    BeforeToolCall,
    ConvertToLlm,
    GetApiKey,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    ToolExecution,
    TransformContext,
    default_convert_to_llm,
)
from ._interrupt import is_interruption
from ._listeners import AgentListener, TwoArgumentListener, as_two_argument_listener
from ._log import log_run_failure
from ._loop import READY, run_loop
from ._messages import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    ImageContent,
    Model,
    StopReason,
    TextContent,
    ThinkingLevel,
    UserMessage,
    failed_reply,
    now_ms,
)
from ._options import StreamFn, StreamOptions
from ._outcome import RunResult
from ._queue import MessageQueue, QueueMode, check_queue_mode
from ._registry import stream_simple
from ._state import AgentState
from ._texts import exception_text
from ._tracer import RunTracer
from .nursery import AbortController, AbortSignal

__all__ = ["Agent", "AgentListener"]

BUSY_PROMPT_TEXT = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)
BUSY_CONTINUE_TEXT = "Agent is already processing. Wait for completion before continuing."
INTERRUPTED_TEXT = "Tool execution was interrupted"
"""The result the Agent keeps for a tool call its run was interrupted in (no events sent)."""

DEFAULT_MODEL = Model("unknown", input=())

T = TypeVar("T")


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


class _ActiveRun:
    __slots__ = ("_idle", "controller", "signal", "skip_steering_poll")

    def __init__(self, skip_steering_poll: bool) -> None:
        self.controller = AbortController()
        self.signal = self.controller.signal
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
        system_prompt: the system prompt of every model call.
        model: the :class:`Model` to call; its ``api`` picks the provider of ``stream_fn``.
        thinking_level: ``"off"``, ``"minimal"`` … ``"xhigh"``: the reasoning asked of a model
            that can reason.
        tools: the :class:`AgentTool` objects (``@tool`` functions) the model may call.
        messages: a transcript to start from.
        stream_fn: talks to the model; the default, :func:`stream_simple`, dispatches to the
            provider registered for ``model.api``.
        convert_to_llm: turns the transcript into the messages the model sees, at every call
            (the default keeps user, assistant and toolResult messages).
        transform_context: rewrites the transcript before ``convert_to_llm`` (pruning,
            summarising, injecting context).
        get_api_key: ``get_api_key(provider)`` returns the key for each call (short-lived
            tokens); ``None`` uses ``options.api_key`` or the environment.
        before_tool_call: sees each validated call and may block it.
        after_tool_call: sees each result and may replace its content, details or error flag.
        prepare_next_turn: after each turn, may replace the context, the model or the thinking
            level of the next one.
        should_stop_after_turn: after each turn, returning ``True`` ends the run.
        steering_mode: ``"one-at-a-time"`` or ``"all"``: how many queued steering messages
            are injected at each poll.
        follow_up_mode: the same, for follow-up messages.
        tool_execution: ``"parallel"`` (the calls of one reply run at once) or
            ``"sequential"``.
        max_parallel_tools: caps how many calls of a parallel batch run at once.
        session_id: sent to providers as a prompt-cache and affinity key.
        thinking_budgets: token budgets per thinking level, overriding a provider's defaults.
        options: the :class:`StreamOptions` of every model call (key, temperature, timeout,
            retries …); ``thinking_level``, ``session_id`` and ``thinking_budgets`` override
            their fields.
        clock: milliseconds since the epoch, for the timestamps of the messages the Agent makes.
    """

    def __init__(
        self,
        *,
        system_prompt: str = "",
        model: Model = DEFAULT_MODEL,
        thinking_level: ThinkingLevel = "off",
        tools: Iterable[Any] = (),
        messages: Iterable[AgentMessage] = (),
        stream_fn: StreamFn = stream_simple,
        convert_to_llm: ConvertToLlm = default_convert_to_llm,
        transform_context: TransformContext | None = None,
        get_api_key: GetApiKey | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        prepare_next_turn: PrepareNextTurn | None = None,
        should_stop_after_turn: ShouldStopAfterTurn | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        tool_execution: ToolExecution = "parallel",
        max_parallel_tools: int | None = None,
        session_id: str | None = None,
        thinking_budgets: Mapping[str, int] | None = None,
        options: StreamOptions | None = None,
        clock: Callable[[], int] = now_ms,
        tracer: RunTracer | None = None,
    ) -> None:
        self._state = AgentState(system_prompt, model, thinking_level, tools, messages)
        # The hooks and tool settings, as AgentLoopConfig takes them: its validators check every
        # value, at construction and on every assignment (see _LoopSetting); each run's config
        # is made of them and the model, the queues and the options of that run.
        self._settings = _checked(
            {
                "stream_fn": stream_fn,
                "convert_to_llm": convert_to_llm,
                "transform_context": transform_context,
                "get_api_key": get_api_key,
                "before_tool_call": before_tool_call,
                "after_tool_call": after_tool_call,
                "prepare_next_turn": prepare_next_turn,
                "should_stop_after_turn": should_stop_after_turn,
                "tool_execution": tool_execution,
                "max_parallel_tools": max_parallel_tools,
                "tracer": tracer,
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
        self._listeners: dict[AgentListener, TwoArgumentListener] = {}
        self._listener_tuple: tuple[TwoArgumentListener, ...] = ()  # what a run iterates, per event
        self._active: _ActiveRun | None = None

    stream_fn: _LoopSetting[StreamFn] = _LoopSetting()
    convert_to_llm: _LoopSetting[ConvertToLlm] = _LoopSetting()
    transform_context: _LoopSetting[TransformContext | None] = _LoopSetting()
    get_api_key: _LoopSetting[GetApiKey | None] = _LoopSetting()
    before_tool_call: _LoopSetting[BeforeToolCall | None] = _LoopSetting()
    after_tool_call: _LoopSetting[AfterToolCall | None] = _LoopSetting()
    prepare_next_turn: _LoopSetting[PrepareNextTurn | None] = _LoopSetting()
    should_stop_after_turn: _LoopSetting[ShouldStopAfterTurn | None] = _LoopSetting()
    tool_execution: _LoopSetting[ToolExecution] = _LoopSetting()
    max_parallel_tools: _LoopSetting[int | None] = _LoopSetting()
    tracer: _LoopSetting[RunTracer | None] = _LoopSetting()

    # --- state ----------------------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """The live state: transcript, tools, streaming message, pending tool calls, last error."""
        return self._state

    @property
    def system_prompt(self) -> str:
        return self._state.system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str) -> None:
        self._state.system_prompt = value

    @property
    def model(self) -> Model:
        return self._state.model

    @model.setter
    def model(self, value: Model) -> None:
        self._state.model = value

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self._state.thinking_level

    @thinking_level.setter
    def thinking_level(self, value: ThinkingLevel) -> None:
        self._state.thinking_level = value

    @property
    def tools(self) -> list[Any]:
        return self._state.tools

    @tools.setter
    def tools(self, value: Iterable[Any]) -> None:
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

    def subscribe(self, listener: AgentListener) -> Callable[[], bool]:
        """Call ``listener(event, signal)`` (or ``listener(event)``) for every event.

        Listeners are awaited in subscription order after the state has been updated for the
        event; subscribing the same function twice adds it once. A listener that raises fails
        the run (see "Listeners" in the concepts).

        Returns:
            The unsubscribe function; it returns whether the listener was still subscribed.

        Raises:
            TypeError: ``listener`` cannot be called with ``(event)`` or ``(event, signal)``.
        """
        self._listeners[listener] = as_two_argument_listener(listener)
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
    ) -> RunResult:
        """Run the agent on a prompt: text (with optional images), a message or a list of them.

        Returns when the run has fully settled. A failure of the run is not raised: it is in the
        result (and in ``state.error_message``); ``result.raise_for_error()`` raises it.

        Returns:
            The run's outcome: its new messages, its reply and text, its error if any.

        Raises:
            AgentBusyError: a run is active.
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_PROMPT_TEXT)
        return await self._run(_as_prompts(message, images, self.clock))

    async def continue_(self) -> RunResult:
        """Continue from the current transcript (after a tool result, a user message, or an abort).

        From an assistant tail it injects queued steering (else follow-ups) as a new prompt.
        Returns the run's outcome, as :meth:`prompt` does.

        Raises:
            AgentBusyError: a run is active.
            ValueError: no messages, or an assistant tail with nothing queued.
        """
        if self._active is not None:
            raise AgentBusyError(BUSY_CONTINUE_TEXT)
        messages = self._state.messages
        if not messages:
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

    def reset(self) -> None:
        """Forget the transcript, the queues and the run state; an active run is not stopped."""
        self._state._reset()
        self.clear_all_queues()

    # --- the run lifecycle ----------------------------------------------------------------------

    async def _run(
        self, prompts: Sequence[AgentMessage], *, skip_initial_steering_poll: bool = False
    ) -> RunResult:
        """Run the loop on ``prompts``, or continue from the transcript when there are none."""
        active = self._active = _ActiveRun(skip_initial_steering_poll)
        self._state._start_run()
        try:
            try:
                config = self._loop_config()
                # The loop works on a copy of the messages; the tools are copied here, since a
                # hook may change the context's list in place.
                state = self._state
                context = AgentContext(state.system_prompt, state.messages, list(state.tools))
                new = await run_loop(prompts, context, config, self._process_event, active.signal)
            except Exception as exc:
                # An engine's interruption passes; after agent_end (a listener raised there)
                # nothing may follow, so there is no failure lifecycle either.
                if is_interruption(exc) or self._state._run_ended:
                    raise
                new = [await self._handle_run_failure(exc, active.signal)]
            except BaseException as exc:
                # KeyboardInterrupt, the host's cancellation: propagate, sending no events, but
                # keep a transcript in which every tool call has a result.
                self._state._answer_open_calls(f"{INTERRUPTED_TEXT} ({type(exc).__name__})")
                raise
            return RunResult(new, self._state.error_message)
        finally:
            self._state._finish_run()
            self._active = None
            active.settled()

    async def _handle_run_failure(self, exc: Exception, signal: AbortSignal) -> AssistantMessage:
        """Close out a run that raised: the failure message gets the full event lifecycle."""
        log_run_failure(exc)
        model = self._state.model
        reason: StopReason = "aborted" if signal.aborted else "error"
        text = exception_text(exc)
        failure = failed_reply(model, reason, text, [TextContent("")], timestamp=self.clock())
        for event in (
            MessageStart(failure),
            MessageEnd(failure),
            TurnEnd(failure, []),
            AgentEnd([failure]),
        ):
            await self._process_event(event)
        return failure

    def _loop_config(self) -> AgentLoopConfig:
        return AgentLoopConfig(
            self._state.model,
            get_steering_messages=self._poll_steering,
            get_follow_up_messages=self._follow_ups.drain,
            options=self._stream_options(),
            clock=self.clock,
            **self._settings,
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
            returned = listeners[0](event, signal)
            return READY if returned is None else returned
        return _notify(listeners, event, signal) if listeners else READY


async def _notify(
    listeners: tuple[TwoArgumentListener, ...], event: AgentEvent, signal: AbortSignal
) -> None:
    for listener in listeners:
        returned = listener(event, signal)
        if returned is not None:
            await returned


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
