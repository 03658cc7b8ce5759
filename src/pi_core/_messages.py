"""Content blocks, messages, usage, models and contexts: the vocabulary every other module speaks.

Messages and content blocks are mutable because providers build a partial message in place while
it streams, as upstream does. Models, tools and contexts are frozen values.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import attrs

from ._compat import ModelCompat
from ._redact import headers_repr

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = [
    "AgentContext",
    "AgentMessage",
    "AssistantContent",
    "AssistantMessage",
    "Context",
    "CustomMessage",
    "ImageContent",
    "Message",
    "Model",
    "ModelCost",
    "StopReason",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevel",
    "Tool",
    "ToolCall",
    "ToolReference",
    "ToolResultContent",
    "ToolResultMessage",
    "Usage",
    "UsageCost",
    "UserMessage",
    "failed_reply",
    "now_ms",
]

StopReason: TypeAlias = Literal[
    "stop", "length", "toolUse", "error", "aborted", "pending", "deferred"
]
"""Why a reply ended; ``"pending"`` marks a partial message that is still streaming."""
ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]

# Every data class that JSON carries has an ``extra`` field, keyword-only and out of ``repr``:
# the JSON keys pi_core does not model. Loading keeps them there and writing puts them back
# unchanged, so that a newer writer's fields survive a round trip through pi_core.


def now_ms() -> int:
    """The current time in Unix milliseconds, the unit of every ``timestamp``."""
    return time.time_ns() // 1_000_000


# --- content blocks ---------------------------------------------------------------------------


@attrs.define
class TextContent:
    """A block of text."""

    type: ClassVar[Literal["text"]] = "text"
    text: str
    text_signature: str | None = None
    """An opaque provider string; sent back to the provider unchanged."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


@attrs.define
class ThinkingContent:
    """A block of model reasoning."""

    type: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    """An opaque provider string that must accompany the thinking when it is sent back."""
    redacted: bool = False
    """True when the provider returned the reasoning encrypted; ``thinking_signature`` holds it."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


@attrs.define
class ImageContent:
    """An image, base64-encoded."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


@attrs.define
class ToolCall:
    """A request by the model to run a tool."""

    type: ClassVar[Literal["toolCall"]] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any]
    thought_signature: str | None = None
    arguments_error: str | None = None
    """Set by the provider when the model's arguments were not a JSON object (``arguments`` is
    then ``{}``): validation fails the call with this text."""
    namespace: str | None = None
    """The namespace the tool was called in, for providers that have them."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall
ToolResultContent: TypeAlias = TextContent | ImageContent


# --- usage --------------------------------------------------------------------------------------


@attrs.define
class UsageCost:
    """What a response cost, in dollars."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0
    total_from_provider: bool | None = None
    """True when ``total`` is the cost the provider itself billed, false (or unset) when it is
    the catalogue's estimate."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


@attrs.define
class Usage:
    """Token counts of one response."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: UsageCost = attrs.Factory(UsageCost)
    reasoning: int | None = None
    """The reasoning tokens among ``output``, where the provider counts them."""
    cache_write_1h: int | None = None
    """The tokens among ``cache_write`` written for one hour (Anthropic's long retention)."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


# --- messages -----------------------------------------------------------------------------------


@attrs.define
class UserMessage:
    """A message from the user: a plain string or a list of text and image blocks."""

    role: ClassVar[Literal["user"]] = "user"
    content: str | list[TextContent | ImageContent]
    timestamp: int = attrs.Factory(now_ms)
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


@attrs.define
class AssistantMessage:
    """A reply of the model: text, thinking and tool calls, with how and why it stopped."""

    role: ClassVar[Literal["assistant"]] = "assistant"
    content: list[TextContent | ThinkingContent | ToolCall]
    api: str
    provider: str
    model: str
    """The requested model id."""
    usage: Usage = attrs.Factory(Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    """Set when ``stop_reason`` is ``"error"`` or ``"aborted"``."""
    response_id: str | None = None
    response_model: str | None = None
    """The concrete model that answered, when it differs from the requested one."""
    timestamp: int = attrs.Factory(now_ms)
    raw_stop_reason: str | None = None
    """The provider's own word for why the reply ended, before mapping to ``stop_reason``."""
    thinking_level: ThinkingLevel | None = None
    """The thinking level the loop asked for (``"off"`` when none)."""
    provider_thinking_level: str | None = None
    """The exact reasoning effort the provider was sent, in its own terms."""
    duration_ms: float | None = None
    """How long the model call took, in milliseconds of a monotonic clock."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)

    def shallow_copy(self) -> AssistantMessage:
        """A new message sharing this one's content list and usage (what upstream's spread does)."""
        return AssistantMessage(
            self.content,
            self.api,
            self.provider,
            self.model,
            self.usage,
            self.stop_reason,
            self.error_message,
            self.response_id,
            self.response_model,
            self.timestamp,
            self.raw_stop_reason,
            self.thinking_level,
            self.provider_thinking_level,
            self.duration_ms,
            extra=self.extra,
        )


def failed_reply(
    model: Model,
    stop_reason: StopReason,
    error_message: str,
    content: list[AssistantContent] | None = None,
    *,
    timestamp: int | None = None,
) -> AssistantMessage:
    """An assistant message of ``model`` that ended in ``stop_reason`` (``"error"`` or
    ``"aborted"``) with ``error_message``, before the model wrote ``content`` (none by default).
    ``timestamp`` defaults to now."""
    return AssistantMessage(
        content if content is not None else [],
        model.api,
        model.provider,
        model.id,
        stop_reason=stop_reason,
        error_message=error_message,
        timestamp=now_ms() if timestamp is None else timestamp,
    )


@attrs.define
class ToolResultMessage:
    """The outcome of one tool call, sent back to the model."""

    role: ClassVar[Literal["toolResult"]] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[TextContent | ImageContent]
    details: Any = None
    is_error: bool = False
    timestamp: int = attrs.Factory(now_ms)
    usage: Usage | None = None
    """What the tool itself spent on models, when it reports it."""
    nested_calls: dict[str, Any] | None = None
    """The calls a tool made of other tools, as JSON (``{"calls": [...], "complete": bool}``)."""
    duration_ms: float | None = None
    """How long ``execute`` ran, in milliseconds of a monotonic clock; ``None`` when it did not
    run."""
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


@attrs.frozen
class ToolReference:
    """Names a tool that a :class:`SystemMessage` removes."""

    name: str
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


def _none_if_empty(tools: list[Any] | None) -> list[Any] | None:
    return tools if tools else None


@attrs.define
class SystemMessage:
    """What the model is told and which tools it has, from this point of the transcript on.

    The leading system message holds the base prompt and the tools of the conversation; a later
    one adds instructions (``content``), replaces named ``sections`` (``None`` removes one), and
    adds or removes tools. :func:`current_system_prompt` and :func:`current_tools` replay them.
    Empty ``tools_added`` / ``tools_removed`` lists are stored as ``None``.
    """

    role: ClassVar[Literal["system"]] = "system"
    content: str | list[TextContent] = ""
    sections: dict[str, str | None] | None = None
    """Named parts of the prompt, rendered after ``content`` in their order."""
    tools_added: list[Tool] | None = attrs.field(default=None, converter=_none_if_empty)
    """The complete declarations of the tools available from here on."""
    tools_removed: list[ToolReference] | None = attrs.field(default=None, converter=_none_if_empty)
    """The tools no longer available from here on."""
    timestamp: int = attrs.Factory(now_ms)
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage
"""The messages a model understands."""


class CustomMessage(Protocol):
    """An app-defined message: any object with a ``role`` string of its own.

    ``convert_to_llm`` decides what (if anything) the model sees of it.
    """

    @property
    def role(self) -> str: ...


AgentMessage: TypeAlias = (
    SystemMessage | UserMessage | AssistantMessage | ToolResultMessage | CustomMessage
)
"""What an agent's transcript holds: LLM messages and custom, app-defined ones."""


# --- models, tools, contexts --------------------------------------------------------------------


@attrs.frozen
class ModelCost:
    """Prices in dollars per million tokens."""

    input: float = 0.0
    """Per million input tokens."""
    output: float = 0.0
    """Per million output tokens."""
    cache_read: float = 0.0
    """Per million input tokens read from the prompt cache."""
    cache_write: float = 0.0
    """Per million input tokens written to the prompt cache."""
    tiers: list[dict[str, float]] | None = attrs.field(default=None, hash=False)
    """Higher prices above an input size, as the catalogue lists them: each tier has
    ``inputTokensAbove`` and the four prices that apply to a request with more input tokens."""


def _as_tuple(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@attrs.frozen
class Model:
    """A model and how to reach it; ``api`` selects the provider in :func:`stream_simple`."""

    id: str
    """The model's id as its server knows it (``"gpt-4o-mini"``)."""
    name: str = attrs.field(default=attrs.Factory(lambda self: self.id, takes_self=True))
    """A human-readable name; defaults to ``id``."""
    api: str = "unknown"
    """The wire protocol, which picks the provider: ``"openai-completions"``,
    ``"anthropic-messages"`` … (see :func:`register_provider`)."""
    provider: str = "unknown"
    """Who serves it (``"openai"``, ``"ollama"`` …): names the key to use, and ``get_api_key``
    receives it."""
    base_url: str = ""
    """The server's URL; ``""`` means the provider's default (api.openai.com …)."""
    reasoning: bool = False
    """Whether the model can think: only then are ``reasoning`` options sent."""
    input: tuple[str, ...] = attrs.field(default=("text",), converter=_as_tuple)
    """What the model accepts: ``"text"``, and ``"image"`` if it reads images (any iterable
    is stored as a tuple)."""
    cost: ModelCost = attrs.Factory(ModelCost)
    """Prices, from which each reply's ``usage.cost`` is computed."""
    context_window: int = 0
    """The most tokens of context the model takes; ``0`` if unknown."""
    max_tokens: int = 0
    """The most output tokens the model can give a reply; ``0`` if unknown."""
    headers: dict[str, str] | None = attrs.field(default=None, hash=False, repr=headers_repr)
    """HTTP headers sent with every request to this model (values hidden in ``repr``)."""
    compat: ModelCompat | None = None
    """What the model's server accepts where servers of its API differ; ``None`` (or a field left
    ``None``) lets the provider detect it from ``base_url``."""
    type: str | None = None
    """What kind of model it is, as the catalogue says: ``"chat"`` for the models of the stream
    functions (the catalogue also lists ``"image"`` and ``"classifier"`` models)."""
    thinking_level_map: dict[str, str | None] | None = attrs.field(default=None, hash=False)
    """Thinking level → the provider's own word for it; a level mapped to ``None`` is one the
    model does not offer (``{"off": None}``: it always thinks)."""
    prompt_cache: dict[str, int] | None = attrs.field(default=None, hash=False)
    """How long the provider keeps a cached prompt, in seconds (``{"short": 300, "long": 3600}``)."""
    input_limits: dict[str, Any] | None = attrs.field(default=None, hash=False)
    """The provider's limits on a request (``maxRequestBytes``, image counts and sizes)."""


@attrs.frozen
class Tool:
    """A tool as the model sees it: a name, a description and a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = attrs.field(hash=False)
    extra: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False, hash=False)


@attrs.frozen
class Context:
    """Everything one model call sees."""

    system_prompt: str | None = None
    messages: list[Message] = attrs.Factory(list)
    tools: list[Tool] = attrs.Factory(list)


@attrs.define
class AgentContext:
    """The working context of an agent run: its transcript and tools.

    The transcript's system messages say what the model is told and which tools it may call;
    a run declares a change of ``tools`` in a new system message before its next request.
    """

    system_prompt: str = ""
    """A prompt for a transcript that has no system message yet: the run's first system
    message carries it. Once the transcript holds one, its system messages rule."""
    messages: list[AgentMessage] = attrs.Factory(list)
    tools: list[Any] = attrs.Factory(list)
    """The run's :class:`AgentTool` objects: what it can execute."""
