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
    "TextContent",
    "ThinkingContent",
    "ThinkingLevel",
    "Tool",
    "ToolCall",
    "ToolResultContent",
    "ToolResultMessage",
    "Usage",
    "UsageCost",
    "UserMessage",
    "failed_reply",
    "now_ms",
]

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]
ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


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


@attrs.define
class ThinkingContent:
    """A block of model reasoning."""

    type: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    """An opaque provider string that must accompany the thinking when it is sent back."""
    redacted: bool = False
    """True when the provider returned the reasoning encrypted; ``thinking_signature`` holds it."""


@attrs.define
class ImageContent:
    """An image, base64-encoded."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str


@attrs.define
class ToolCall:
    """A request by the model to run a tool."""

    type: ClassVar[Literal["toolCall"]] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any]
    thought_signature: str | None = None


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


@attrs.define
class Usage:
    """Token counts of one response."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: UsageCost = attrs.Factory(UsageCost)


# --- messages -----------------------------------------------------------------------------------


@attrs.define
class UserMessage:
    """A message from the user: a plain string or a list of text and image blocks."""

    role: ClassVar[Literal["user"]] = "user"
    content: str | list[TextContent | ImageContent]
    timestamp: int = attrs.Factory(now_ms)


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


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
"""The messages a model understands."""


class CustomMessage(Protocol):
    """An app-defined message: any object with a ``role`` string of its own.

    ``convert_to_llm`` decides what (if anything) the model sees of it.
    """

    @property
    def role(self) -> str: ...


AgentMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | CustomMessage
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


@attrs.frozen
class Tool:
    """A tool as the model sees it: a name, a description and a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = attrs.field(hash=False)


@attrs.frozen
class Context:
    """Everything one model call sees."""

    system_prompt: str | None = None
    messages: list[Message] = attrs.Factory(list)
    tools: list[Tool] = attrs.Factory(list)


@attrs.define
class AgentContext:
    """The working context of an agent run: its system prompt, transcript and tools."""

    system_prompt: str = ""
    messages: list[AgentMessage] = attrs.Factory(list)
    tools: list[Any] = attrs.Factory(list)
    """The run's :class:`AgentTool` objects."""
