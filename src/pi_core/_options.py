"""Per-call stream options and the stream function protocol every provider follows."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import attrs

from ._events import AssistantMessageEvent
from ._maybe_async import needs_await
from ._messages import Context, Model, ThinkingLevel
from ._redact import headers_repr, secret_repr
from .nursery import AbortSignal

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = [
    "CacheRetention",
    "NamedToolChoice",
    "StreamFn",
    "StreamOptions",
    "StreamResult",
    "ToolChoice",
    "close_stream",
    "open_stream",
]

CacheRetention = Literal["none", "short", "long"]


class NamedToolChoice(TypedDict):
    """``{"name": "lookup"}``: the model must call this tool."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | NamedToolChoice
"""Which tools the model may call: ``"auto"`` (it decides), ``"none"`` (no tool; the tools are
still described), ``"required"`` (at least one tool), or ``{"name": tool}`` (that tool)."""


@attrs.frozen
class StreamOptions:
    """Options of one model call; providers ignore what they do not use."""

    api_key: str | None = attrs.field(default=None, repr=secret_repr)
    """The provider's key; ``None`` reads the provider's environment variable
    (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` …). Never shown in ``repr``."""
    session_id: str | None = None
    """A stable id for a conversation: providers use it as a prompt-cache key and for session
    affinity, so that consecutive calls hit the same cache."""
    reasoning: ThinkingLevel | None = None
    """The thinking level; ``None`` (or ``"off"``) asks for no reasoning."""
    thinking_budgets: Mapping[str, int] | None = attrs.field(default=None, hash=False)
    """Token budgets per thinking level, overriding a provider's defaults."""
    temperature: float | None = None
    """Sampling temperature; ``None`` leaves the provider's default."""
    max_tokens: int | None = None
    """The most tokens the reply may have; ``None`` leaves it to the provider (Anthropic, whose
    API requires a limit, then uses the model's ``max_tokens``)."""
    headers: Mapping[str, str] | None = attrs.field(default=None, hash=False, repr=headers_repr)
    """Extra HTTP headers for the request, added to the model's own ``headers``."""
    metadata: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    """Provider-specific request metadata (Anthropic's ``metadata.user_id``, for example)."""
    cache_retention: CacheRetention | None = None
    """How long the provider should keep the prompt cached: ``"none"``, ``"short"`` (the
    default) or ``"long"`` where the server supports it."""
    timeout: float | None = None
    """Seconds for the whole request, for providers that make one."""
    max_retries: int = 2
    """How often an HTTP provider retries a request that failed before anything was streamed
    (a connection error, or status 408, 409, 429, 500, 502, 503, 504 or 529)."""
    max_retry_delay: float = 60.0
    """The longest wait before a retry, in seconds: a server asking for longer (``retry-after``)
    gets its error returned at once, naming the delay it asked for."""
    signal: AbortSignal | None = attrs.field(default=None, eq=False, hash=False)
    """Aborts the request at once; the loop sets it to the run's signal."""
    tool_choice: ToolChoice | None = attrs.field(default=None, hash=False)
    """Which tools the model may call (see :data:`ToolChoice`); ``None`` leaves it to the API
    (the model decides). Sent only when the request has tools."""
    sampling_params: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    """Sampling parameters the options do not name (``top_p``, ``top_k``, ``min_p``,
    ``repetition_penalty`` …), merged into the request body last, so they override the named
    fields. Only the OpenAI-compatible APIs (Chat Completions and Responses) send them, for the
    servers (llama.cpp, vLLM, SGLang …) that take them; the others ignore them."""


StreamResult: TypeAlias = (
    AsyncIterable[AssistantMessageEvent] | Awaitable[AsyncIterable[AssistantMessageEvent]]
)
StreamFn: TypeAlias = Callable[[Model, Context, StreamOptions], StreamResult]
"""``stream_fn(model, context, options)``: an async iterable of :data:`AssistantMessageEvent`
(typically an async generator), or an awaitable of one. It ends with exactly one
:class:`StreamDone` or :class:`StreamError` and should encode failures as the latter."""


async def open_stream(
    stream_fn: StreamFn, model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    """Call ``stream_fn`` and return an iterator over its events (awaiting it first if it
    returned an awaitable); whatever it raises propagates. Close the iterator with
    :func:`close_stream`."""
    events = stream_fn(model, context, options)
    if needs_await(events):
        events = await events
    return aiter(events)


async def close_stream(iterator: AsyncIterator[AssistantMessageEvent]) -> None:
    """Close an iterator from :func:`open_stream` (an async generator's ``finally`` runs now)."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()
