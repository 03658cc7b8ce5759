"""The loop's configuration and the context / result classes its hooks receive and return."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from inspect import isawaitable
from typing import Any, Literal, TypeAlias, TypeVar

import attrs
from typing_extensions import TypeIs

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
    "GetApiKey",
    "MaybeAwaitable",
    "MessageSource",
    "NextTurn",
    "PrepareNextTurn",
    "ShouldStopAfterTurn",
    "ToolExecution",
    "TransformContext",
    "TurnContext",
    "default_convert_to_llm",
    "needs_await",
]

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]
ToolExecution = Literal["parallel", "sequential"]

_LLM_ROLES = frozenset(("user", "assistant", "toolResult"))


_PLAIN_TYPES = frozenset((type(None), bool, int, float, str, list, tuple, dict))


def needs_await(value: object) -> TypeIs[Awaitable[Any]]:
    """Whether a hook's return value is awaitable; plain values are told apart without an ABC
    check, since most hooks are sync and this runs on every call."""
    return type(value) not in _PLAIN_TYPES and isawaitable(value)


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """Keep the messages a model understands (roles user, assistant, toolResult); drop the rest."""
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
    """What ``prepare_next_turn`` and ``should_stop_after_turn`` see after a turn."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage] = attrs.field(hash=False)
    context: AgentContext = attrs.field(hash=False)
    """The live working context; it already holds the assistant message and the tool results."""
    new_messages: list[AgentMessage] = attrs.field(hash=False)
    """The live list the run will return."""


@attrs.frozen
class NextTurn:
    """What ``prepare_next_turn`` may change before the next model call."""

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


def check_max_parallel_tools(value: int | None) -> None:
    """Raise ``ValueError`` unless ``value`` is a positive int or ``None``."""
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ValueError(f"max_parallel_tools must be a positive int or None, not {value!r}")


def check_tool_execution(value: str) -> None:
    """Raise ``ValueError`` unless ``value`` is ``"parallel"`` or ``"sequential"``."""
    if value not in ("parallel", "sequential"):
        raise ValueError(f"tool_execution must be 'parallel' or 'sequential', not {value!r}")


@attrs.frozen
class AgentLoopConfig:
    """How a run calls the model and its hooks. Every hook may be sync or async."""

    model: Model
    stream_fn: StreamFn = stream_simple
    convert_to_llm: ConvertToLlm = default_convert_to_llm
    transform_context: TransformContext | None = None
    get_api_key: GetApiKey | None = None
    get_steering_messages: MessageSource | None = None
    get_follow_up_messages: MessageSource | None = None
    should_stop_after_turn: ShouldStopAfterTurn | None = None
    prepare_next_turn: PrepareNextTurn | None = None
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    tool_execution: ToolExecution = attrs.field(
        default="parallel", validator=lambda _c, _a, value: check_tool_execution(value)
    )
    max_parallel_tools: int | None = attrs.field(
        default=None, validator=lambda _c, _a, value: check_max_parallel_tools(value)
    )
    """Caps how many ``execute`` calls of a parallel batch run at once."""
    options: StreamOptions = attrs.Factory(StreamOptions)
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
    tracer: RunTracer | None = None
    """Traces every run made with this config (see :mod:`pi_core.tracing`); ``None``: no cost."""
