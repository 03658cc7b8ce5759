"""The loop's configuration and the context / result classes its hooks receive and return."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal, TypeAlias, TypeVar

import attrs

from ._limits import RunLimits
from ._messages import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    now_ms,
)
from ._options import StreamFn, StreamOptions
from ._output import OutputSpec
from ._registry import stream_simple
from ._tools import AgentToolResult
from ._tracer import RunTracer
from .nursery import AbortSignal

__all__ = [
    "AfterToolCall",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentLoopConfig",
    "BeforeToolCall",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "ConvertToLlm",
    "FinishTurn",
    "GetApiKey",
    "MaybeAwaitable",
    "MessageSource",
    "NextTurn",
    "PrepareNextTurn",
    "PrepareRequest",
    "RequestContext",
    "RequestUpdate",
    "ShouldStopAfterTurn",
    "ToolExecution",
    "TransformContext",
    "TurnContext",
    "TurnDecision",
    "default_convert_to_llm",
]

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]
ToolExecution = Literal["parallel", "sequential"]

_LLM_ROLES = frozenset(("system", "user", "assistant", "toolResult"))


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """Keep the messages a model understands (roles system, user, assistant, toolResult); drop
    the rest. A replacement must keep the system messages too: they carry the system prompt and
    the tools."""
    return [message for message in messages if message.role in _LLM_ROLES]  # type: ignore[misc]


@attrs.frozen
class BeforeToolCallContext:
    """What ``before_tool_call`` sees: ``args`` is the validated copy ``execute`` will receive."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    """The raw block from the assistant message."""
    args: Any = attrs.field(hash=False)
    context: AgentContext = attrs.field(hash=False)


@attrs.frozen
class BeforeToolCallResult:
    """``block=True`` turns the call into an error result with ``reason`` as its text."""

    block: bool = False
    reason: str | None = None


@attrs.frozen
class AfterToolCallContext:
    """What ``after_tool_call`` sees: the executed outcome, before any override."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any = attrs.field(hash=False)
    result: AgentToolResult
    is_error: bool
    context: AgentContext = attrs.field(hash=False)


@attrs.frozen
class AfterToolCallResult:
    """A partial override of a tool's result: each field that is not ``None`` replaces it."""

    content: list[TextContent | ImageContent] | None = attrs.field(default=None, hash=False)
    details: Any = attrs.field(default=None, hash=False)
    is_error: bool | None = None
    terminate: bool | None = None


@attrs.frozen
class TurnContext:
    """What ``finish_turn``, ``prepare_next_turn`` and ``should_stop_after_turn`` see of a
    turn."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage] = attrs.field(hash=False)
    context: AgentContext = attrs.field(hash=False)
    """The live working context; it already holds the assistant message and the tool results."""
    new_messages: list[AgentMessage] = attrs.field(hash=False)
    """The live list the run will return."""


@attrs.frozen
class NextTurn:
    """What ``prepare_next_turn`` may change before the next turn: each field that is not
    ``None`` applies to that turn and the later ones."""

    context: AgentContext | None = attrs.field(default=None, hash=False)
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None
    """Replaces ``options.reasoning``; ``"off"`` means no reasoning."""
    messages: list[AgentMessage] | None = attrs.field(default=None, hash=False)
    """Messages to add at the start of the next turn, before the steering messages polled for
    it; they are emitted and kept in the transcript as any injected message."""


def _check_action(_instance: object, _attribute: object, value: str) -> None:
    if value not in ("continue", "end"):
        raise ValueError(f"TurnDecision action must be 'continue' or 'end', not {value!r}")


@attrs.frozen
class TurnDecision:
    """What ``finish_turn`` decides about the run after a turn.

    ``"end"`` ends the run after this turn's ``turn_end``, without polling the queues (queued
    messages stay queued). ``"continue"`` makes sure one more request follows: when neither
    tool results nor steering or follow-up messages lead to one, the run makes a request on the
    context as it is.
    """

    action: Literal["continue", "end"] = attrs.field(validator=_check_action)


@attrs.frozen
class RequestContext:
    """What ``prepare_request`` sees before a model request."""

    context: AgentContext = attrs.field(hash=False)
    """The live working context the request is made from."""
    model: Model
    thinking_level: ThinkingLevel
    """The level the request will ask for (``"off"`` when none)."""


@attrs.frozen
class RequestUpdate:
    """What ``prepare_request`` may change: each field that is not ``None`` applies to this
    request and the later ones of the run."""

    context: AgentContext | None = attrs.field(default=None, hash=False)
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None
    """Replaces ``options.reasoning``; ``"off"`` means no reasoning."""


# The hooks' types, written once for the Agent and AgentLoopConfig.
ConvertToLlm: TypeAlias = Callable[[list[AgentMessage]], MaybeAwaitable[list[Message]]]
TransformContext: TypeAlias = Callable[
    [list[AgentMessage], AbortSignal], MaybeAwaitable[list[AgentMessage]]
]
GetApiKey: TypeAlias = Callable[[str], MaybeAwaitable[str | None]]
MessageSource: TypeAlias = Callable[[], MaybeAwaitable[Sequence[AgentMessage]]]
BeforeToolCall: TypeAlias = Callable[
    [BeforeToolCallContext, AbortSignal], MaybeAwaitable[BeforeToolCallResult | None]
]
AfterToolCall: TypeAlias = Callable[
    [AfterToolCallContext, AbortSignal], MaybeAwaitable[AfterToolCallResult | None]
]
ShouldStopAfterTurn: TypeAlias = Callable[[TurnContext], MaybeAwaitable[bool]]
PrepareNextTurn: TypeAlias = Callable[[TurnContext], MaybeAwaitable[NextTurn | None]]
FinishTurn: TypeAlias = Callable[[TurnContext, AbortSignal], MaybeAwaitable[TurnDecision | None]]
PrepareRequest: TypeAlias = Callable[
    [RequestContext, AbortSignal], MaybeAwaitable[RequestUpdate | None]
]


def check_max_parallel_tools(_instance: object, _attribute: object, value: int | None) -> None:
    """Raise ``ValueError`` unless ``value`` is a positive int or ``None`` (an attrs validator)."""
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ValueError(f"max_parallel_tools must be a positive int or None, not {value!r}")


def check_max_tool_calls_per_reply(
    _instance: object, _attribute: object, value: int | None
) -> None:
    """Raise ``ValueError`` unless ``value`` is a positive int or ``None`` (an attrs validator)."""
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ValueError(f"max_tool_calls_per_reply must be a positive int or None, not {value!r}")


def check_tool_execution(_instance: object, _attribute: object, value: str) -> None:
    """Raise ``ValueError`` unless ``value`` is ``"parallel"`` or ``"sequential"`` (an attrs
    validator)."""
    if value not in ("parallel", "sequential"):
        raise ValueError(f"tool_execution must be 'parallel' or 'sequential', not {value!r}")


SETTING_OF: Final = "pi_core.setting_of"
"""The metadata key of an :class:`AgentLoopConfig` field: who else takes it as an option."""

# Where a loop setting is declared besides AgentLoopConfig. scripts/loop_settings.py writes the
# Agent's options and AgentSpec's fields from the fields marked with these.
_EVERYWHERE: Final = {SETTING_OF: ("agent", "spec")}
_AGENT_TOO: Final = {SETTING_OF: ("agent",)}
_SPEC_TOO: Final = {SETTING_OF: ("spec",)}


@attrs.frozen
class AgentLoopConfig:
    """How a run calls the model and its hooks. Every hook may be sync or async.

    This class is the one declaration of the loop's settings: a field marked for the Agent is
    also an ``Agent`` option (and attribute), one marked for the spec a field of
    ``pi_core.durable.AgentSpec``; ``scripts/loop_settings.py`` writes those from here.
    """

    model: Model
    stream_fn: StreamFn = attrs.field(default=stream_simple, metadata=_AGENT_TOO)
    convert_to_llm: ConvertToLlm = attrs.field(default=default_convert_to_llm, metadata=_EVERYWHERE)
    transform_context: TransformContext | None = attrs.field(default=None, metadata=_EVERYWHERE)
    get_api_key: GetApiKey | None = attrs.field(default=None, metadata=_EVERYWHERE)
    get_steering_messages: MessageSource | None = None
    get_follow_up_messages: MessageSource | None = None
    finish_turn: FinishTurn | None = attrs.field(default=None, metadata=_EVERYWHERE)
    """``finish_turn(turn, signal)``: after a turn's tool calls and before its ``turn_end``
    (also after a failed or aborted reply, where what it returns is ignored); a
    :class:`TurnDecision` ends the run or asks for one more request."""
    should_stop_after_turn: ShouldStopAfterTurn | None = attrs.field(
        default=None, metadata=_EVERYWHERE
    )
    """``should_stop_after_turn(turn)``: after a turn's ``turn_end``; ``True`` ends the run."""
    prepare_next_turn: PrepareNextTurn | None = attrs.field(default=None, metadata=_EVERYWHERE)
    """``prepare_next_turn(turn)``: only when another turn follows, after the steering poll and
    before its ``turn_start``; a :class:`NextTurn` changes the context, model or thinking level
    and may add messages to the next turn."""
    prepare_request: PrepareRequest | None = attrs.field(default=None, metadata=_EVERYWHERE)
    """``prepare_request(request, signal)``: before every model request, the first included,
    after the turn's messages are in; a :class:`RequestUpdate` changes the context, model or
    thinking level from this request on."""
    before_tool_call: BeforeToolCall | None = attrs.field(default=None, metadata=_EVERYWHERE)
    after_tool_call: AfterToolCall | None = attrs.field(default=None, metadata=_EVERYWHERE)
    tool_execution: ToolExecution = attrs.field(
        default="parallel", validator=check_tool_execution, metadata=_EVERYWHERE
    )
    max_parallel_tools: int | None = attrs.field(
        default=None, validator=check_max_parallel_tools, metadata=_EVERYWHERE
    )
    """Caps how many ``execute`` calls of a parallel batch run at once."""
    max_tool_calls_per_reply: int | None = attrs.field(
        default=10_000, validator=check_max_tool_calls_per_reply, metadata=_EVERYWHERE
    )
    """How many tool calls of one reply run; each call past them gets an error result instead
    (``None``: all of them). The default is far above what models make, and low enough that a
    reply of a hundred thousand calls does not hold a run for seconds."""
    limits: RunLimits | None = attrs.field(default=None, metadata=_EVERYWHERE)
    """What each run may spend: turns, tokens, dollars, seconds (``None``: no limits)."""
    output: OutputSpec | None = None
    """The typed answer each run asks for (``OutputSpec.of(output_type, retries)``): the model
    gives it by calling the output tool, offered beside the others, and the run ends after that
    batch; ``None``: a plain text answer. A run whose retries are spent raises
    :class:`~pi_core.OutputError`."""
    options: StreamOptions = attrs.field(factory=StreamOptions, metadata=_SPEC_TOO)
    clock: Callable[[], int] = now_ms
    """Milliseconds since the epoch: the timestamp of every message the run itself makes.

    An execution engine that replays a run supplies a clock whose readings it records, so that
    the replayed messages carry the same timestamps as the first time.
    """
    before_tool_batch: Callable[[Sequence[ToolCall]], MaybeAwaitable[None]] | None = None
    """Called in the run's own task, with the calls about to execute, before any of them starts.

    The calls come in source order (a sequential batch calls it once per call, a parallel batch
    once with every call that passed preflight); an async one is awaited before the calls start.
    An execution engine uses it to take what must be
    taken in a deterministic order, such as the ids of the steps the calls will run as.
    """
    tracer: RunTracer | None = attrs.field(default=None, metadata=_EVERYWHERE)
    """Traces every run made with this config (see :mod:`pi_core.tracing`); ``None``: no cost."""
    interruptions: tuple[type[BaseException], ...] = attrs.field(default=(), metadata=_AGENT_TOO)
    """Exception types a run lets pass unchanged, as it does a cancellation.

    A run turns failures into data: a raising tool becomes an error result, a raising stream
    function an error reply, a failing Agent run a failure message. An execution engine that
    stops a run by raising its own exception at the next recorded step names that exception
    here, so that no such place hides the stop from it. Only failure paths look at it.
    """
