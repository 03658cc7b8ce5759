"""A scripted model for tests and demos: replies come from a queue, streamed like a real model's.

:class:`FauxProvider` answers each call with the next queued step, an :class:`AssistantMessage`
or a factory that builds one from the call. The reply is streamed in chunks of a few "tokens"
(a seedable random size each), optionally paced at ``tokens_per_second``, and honours
``options.signal`` mid-stream. Usage is estimated from the text (four characters a token), with a
prompt-cache simulation per ``session_id``.

Example::

    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("Hello!")])
    agent = Agent(model=faux.get_model(), stream_fn=faux.stream)
"""

from __future__ import annotations

import copy
import random
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast, overload

import anyio
import anyio.lowlevel
import attrs

from .._events import AssistantMessageEvent, StreamError
from .._maybe_async import needs_await
from .._messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    Model,
    ModelCost,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    now_ms,
)
from .._options import StreamOptions
from .._registry import get_provider, register_provider, unregister_provider
from .._texts import exception_text
from ._faux_stream import (
    PartialReply,
    aborted,
    assistant_text,
    common_prefix_length,
    estimate_tokens,
    serialize_context,
    streamed_text,
)
from ._prompt_cache import PromptCache

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = [
    "FauxProvider",
    "FauxResponseFactory",
    "FauxResponseStep",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
]

FauxResponseFactory: TypeAlias = Callable[
    [Context, StreamOptions, int, Model], AssistantMessage | Awaitable[AssistantMessage]
]
"""``factory(context, options, call_count, model)``, sync or async; the count includes this call."""
FauxResponseStep: TypeAlias = AssistantMessage | FauxResponseFactory
"""One queued reply: a message to stream, or a factory that builds it when the call is made."""

_NO_RESPONSE = "No more faux responses queued"
_DEFAULT_MODEL: Mapping[str, Any] = {"id": "faux-1", "name": "Faux Model"}
# Upstream's defaults for every faux model definition; ``name`` defaults to the id via Model.
_MODEL_DEFAULTS: Mapping[str, Any] = {
    "base_url": "http://localhost:0",
    "input": ("text", "image"),
    "context_window": 128000,
    "max_tokens": 16384,
}
_MODEL_FIELDS = frozenset(field.name for field in attrs.fields(Model))


# --- builders -----------------------------------------------------------------------------------


def faux_text(text: str) -> TextContent:
    """A text block for a scripted reply."""
    return TextContent(text)


def faux_thinking(text: str) -> ThinkingContent:
    """A thinking block for a scripted reply."""
    return ThinkingContent(text)


def faux_tool_call(name: str, arguments: dict[str, Any], id: str | None = None) -> ToolCall:
    """A tool-call block for a scripted reply; the default id is ``tool:<ms>:<random>``."""
    call_id = id if id is not None else f"tool:{now_ms()}:{uuid.uuid4().hex[:12]}"
    return ToolCall(call_id, name, arguments)


def faux_assistant_message(
    content: str | AssistantContent | Iterable[AssistantContent],
    stop_reason: StopReason = "stop",
    error_message: str | None = None,
    *,
    response_id: str | None = None,
    timestamp: int | None = None,
) -> AssistantMessage:
    """A scripted reply: a string becomes one text block; usage is zero.

    ``api`` / ``provider`` / ``model`` are placeholders (``"faux"``, ``"faux"``, ``"faux-1"``):
    the provider replaces them with its own and the requested model id when it streams the reply.

    Raises:
        TypeError: a block is not a text, thinking or tool-call block.
    """
    if isinstance(content, str):
        blocks: list[AssistantContent] = [TextContent(content)]
    elif isinstance(content, (TextContent, ThinkingContent, ToolCall)):
        blocks = [content]
    else:
        blocks = list(content)
    for block in blocks:
        _check_block(block)
    message = AssistantMessage(
        blocks, "faux", "faux", "faux-1", Usage(), stop_reason, error_message, response_id
    )
    if timestamp is not None:
        message.timestamp = timestamp
    return message


def _check_block(block: object) -> None:
    if not isinstance(block, (TextContent, ThinkingContent, ToolCall)):
        raise TypeError(
            f"a faux reply holds text, thinking and tool-call blocks, not {type(block).__name__}"
        )


# --- the provider -------------------------------------------------------------------------------


class FauxProvider:
    """A scripted model provider; see the module docstring.

    Args:
        models: model ids or partial model definitions (dicts of :class:`Model` field names,
            ``id`` required); ``None`` gives one model ``faux-1``. ``api`` and ``provider`` are
            filled in by the provider.
        api: the api name the models carry and :meth:`register` uses.
        provider: the provider name the models and replies carry.
        tokens_per_second: pace the stream at this rate; ``None`` streams as fast as the event
            loop allows (one checkpoint per chunk).
        token_size: ``(min, max)`` tokens of four characters per chunk; clamped so that
            ``1 <= min <= max``.
        seed: seeds the chunk-size generator, for reproducible chunking.

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: an argument has the wrong value.
    """

    def __init__(
        self,
        *,
        models: Iterable[str | Mapping[str, Any]] | None = None,
        api: str = "faux",
        provider: str = "faux",
        tokens_per_second: float | None = None,
        token_size: tuple[int, int] = (3, 5),
        seed: int | None = None,
    ) -> None:
        _check_name("api", api)
        _check_name("provider", provider)
        self._api = api
        self._provider = provider
        self._models = _build_models(models, api, provider)
        self._tokens_per_second = _check_rate(tokens_per_second)
        self._min_tokens, self._max_tokens = _clamp_token_size(token_size)
        self._rng = random.Random(seed)
        self._queue: deque[FauxResponseStep] = deque()
        self._call_count = 0
        self._prompt_cache = PromptCache()

    @property
    def api(self) -> str:
        """The api name of this provider's models."""
        return self._api

    @property
    def provider(self) -> str:
        """The provider name of this provider's models and replies."""
        return self._provider

    @property
    def models(self) -> tuple[Model, ...]:
        """This provider's models, the first one being the default."""
        return self._models

    @property
    def call_count(self) -> int:
        """How many times :meth:`stream` has been called."""
        return self._call_count

    @property
    def pending_response_count(self) -> int:
        """How many queued steps are left."""
        return len(self._queue)

    @overload
    def get_model(self) -> Model: ...
    @overload
    def get_model(self, id: str) -> Model | None: ...

    def get_model(self, id: str | None = None) -> Model | None:
        """The first model, or the model with that id (``None`` if there is none)."""
        if id is None:
            return self._models[0]
        return next((model for model in self._models if model.id == id), None)

    def set_responses(self, steps: Iterable[FauxResponseStep]) -> None:
        """Replace the queue with ``steps``."""
        checked = [_check_step(step) for step in steps]
        self._queue = deque(checked)

    def append_responses(self, steps: Iterable[FauxResponseStep]) -> None:
        """Add ``steps`` at the end of the queue."""
        self._queue.extend([_check_step(step) for step in steps])

    def register(self) -> FauxProvider:
        """Serve :func:`pi_core.stream_simple` for :attr:`api` (replacing any); returns self."""
        register_provider(self._api, self.stream)
        return self

    def unregister(self) -> None:
        """Stop serving :attr:`api`, unless another provider has been registered there since."""
        if get_provider(self._api) == self.stream:
            unregister_provider(self._api)

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        """The stream function: answer one call with the next queued step.

        The step is taken and :attr:`call_count` incremented here, when the call is made, as
        upstream does; the returned async generator then resolves and streams it.
        """
        self._call_count += 1
        step = self._queue.popleft() if self._queue else None
        options = options if options is not None else StreamOptions()
        return self._reply(step, self._call_count, model, context, options)

    def __repr__(self) -> str:
        return (
            f"<FauxProvider api={self._api!r} calls={self._call_count} pending={len(self._queue)}>"
        )

    # --- one call -------------------------------------------------------------------------------

    async def _reply(
        self,
        step: FauxResponseStep | None,
        call_count: int,
        model: Model,
        context: Context,
        options: StreamOptions,
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Resolve ``step`` and stream the reply block by block.

        As upstream, abort is checked before each block and after each chunk's wait, not before
        the terminal event; an abort ends the stream with the partial reply so far.
        """
        # Upstream starts its reply on a microtask; this checkpoint is the same break, and makes
        # the first event of every call cancellable.
        await anyio.lowlevel.checkpoint()
        message = await self._resolve(step, call_count, model, context, options)
        if isinstance(message, StreamError):
            yield message
            return
        signal = options.signal
        partial = PartialReply(message)
        if aborted(signal):
            yield partial.aborted()
            return
        yield partial.start()
        for index, block in enumerate(message.content):
            if aborted(signal):
                yield partial.aborted()
                return
            yield partial.open_block(block)
            for chunk in self._chunks(streamed_text(block)):
                await self._wait_for(chunk)
                if aborted(signal):
                    yield partial.aborted()
                    return
                yield partial.add_chunk(index, block, chunk)
            yield partial.close_block(index, block)
        yield partial.done()

    async def _resolve(
        self,
        step: FauxResponseStep | None,
        call_count: int,
        model: Model,
        context: Context,
        options: StreamOptions,
    ) -> AssistantMessage | StreamError:
        """The final message of this call, or the single error event that replaces the stream."""
        if step is None:
            failure = self._error_message(model, _NO_RESPONSE)
            failure.usage = self._estimate_usage(context, failure, options)
            return StreamError("error", failure)
        try:
            message = (
                step
                if isinstance(step, AssistantMessage)
                else step(context, options, call_count, model)
            )
            if needs_await(message):
                message = await message
            final = self._adopt(message, model)
            final.usage = self._estimate_usage(context, final, options)
        except Exception as exc:  # a broken script is an error reply, as upstream reports it
            return StreamError("error", self._error_message(model, exception_text(exc)))
        return final

    def _adopt(self, message: object, model: Model) -> AssistantMessage:
        """A deep copy of a scripted reply, carrying this provider's names and the model id."""
        if not isinstance(message, AssistantMessage):
            raise TypeError(
                f"a faux response factory must return an AssistantMessage, not "
                f"{type(message).__name__}"
            )
        for block in message.content:
            _check_block(block)
        final = copy.deepcopy(message)
        final.api, final.provider, final.model = self._api, self._provider, model.id
        return final

    def _error_message(self, model: Model, text: str) -> AssistantMessage:
        return AssistantMessage(
            [], self._api, self._provider, model.id, stop_reason="error", error_message=text
        )

    def _chunks(self, text: str) -> list[str]:
        """Cut ``text`` into chunks of a random number of four-character tokens each."""
        if not text:
            return [""]
        chunks: list[str] = []
        start = 0
        while start < len(text):
            size = 4 * self._rng.randint(self._min_tokens, self._max_tokens)
            chunks.append(text[start : start + size])
            start += size
        return chunks

    async def _wait_for(self, chunk: str) -> None:
        if self._tokens_per_second is None:
            await anyio.lowlevel.checkpoint()
        else:
            await anyio.sleep(estimate_tokens(chunk) / self._tokens_per_second)

    def _estimate_usage(
        self, context: Context, message: AssistantMessage, options: StreamOptions
    ) -> Usage:
        """Four characters a token; with a session id, a prompt cache keyed by that id."""
        prompt = serialize_context(context)
        prompt_tokens = estimate_tokens(prompt)
        output = estimate_tokens(assistant_text(message.content))
        input_tokens, cache_read, cache_write = prompt_tokens, 0, 0
        session_id = options.session_id
        if session_id and options.cache_retention != "none":
            previous = self._prompt_cache.swap(session_id, prompt)
            if previous:
                shared = common_prefix_length(previous, prompt)
                cache_read = estimate_tokens(previous[:shared])
                cache_write = estimate_tokens(prompt[shared:])
                input_tokens = max(0, prompt_tokens - cache_read)
            else:
                # Upstream counts a first prompt both as input and as written to the cache.
                cache_write = prompt_tokens
        total = input_tokens + output + cache_read + cache_write
        return Usage(input_tokens, output, cache_read, cache_write, total)


# --- constructor checks -------------------------------------------------------------------------


def _check_name(what: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")


def _check_rate(tokens_per_second: float | None) -> float | None:
    if tokens_per_second is None:
        return None
    if isinstance(tokens_per_second, bool) or not isinstance(tokens_per_second, (int, float)):
        raise TypeError(f"tokens_per_second must be a number, got {tokens_per_second!r}")
    if not tokens_per_second > 0:  # also rejects NaN
        raise ValueError(f"tokens_per_second must be > 0, got {tokens_per_second!r}")
    return float(tokens_per_second)


def _clamp_token_size(token_size: tuple[int, int]) -> tuple[int, int]:
    """Upstream's clamp: ``min`` is at most ``max`` and at least 1; ``max`` at least ``min``."""
    try:
        low, high = token_size
    except (TypeError, ValueError):
        raise TypeError(f"token_size must be a (min, max) pair, got {token_size!r}") from None
    for bound in (low, high):
        if isinstance(bound, bool) or not isinstance(bound, int):
            raise TypeError(f"token_size bounds must be integers, got {token_size!r}")
    low = max(1, min(low, high))
    return low, max(low, high)


def _check_step(step: object) -> FauxResponseStep:
    if isinstance(step, AssistantMessage):
        for block in step.content:
            _check_block(block)
        return step
    if callable(step):
        # Its signature cannot be checked before it is called; a wrong one fails that call.
        return cast("FauxResponseFactory", step)
    raise TypeError(
        f"a faux response step is an AssistantMessage or a factory, not {type(step).__name__}"
    )


def _build_models(
    models: Iterable[str | Mapping[str, Any]] | None, api: str, provider: str
) -> tuple[Model, ...]:
    entries = [_DEFAULT_MODEL] if models is None else list(models)
    if not entries:
        raise ValueError("models must name at least one model (or be None for the default)")
    built = tuple(_build_model(entry, api, provider) for entry in entries)
    ids = [model.id for model in built]
    duplicates = sorted({model_id for model_id in ids if ids.count(model_id) > 1})
    if duplicates:
        raise ValueError(f"models has duplicate ids: {', '.join(duplicates)}")
    return built


def _build_model(entry: str | Mapping[str, Any], api: str, provider: str) -> Model:
    if isinstance(entry, str):
        entry = {"id": entry}
    elif not isinstance(entry, Mapping):
        raise TypeError(f"a models entry is a model id or a dict, not {type(entry).__name__}")
    model_id = entry.get("id")
    if not isinstance(model_id, str) or not model_id:
        raise ValueError(f"a models entry needs a non-empty string 'id', got {dict(entry)!r}")
    unknown = sorted(set(entry) - _MODEL_FIELDS)
    if unknown:
        raise ValueError(f"unknown Model fields in models entry {model_id!r}: {', '.join(unknown)}")
    if "api" in entry or "provider" in entry:
        raise ValueError(
            f"models entry {model_id!r} sets api or provider; pass them to FauxProvider instead"
        )
    fields = {**_MODEL_DEFAULTS, **entry, "api": api, "provider": provider}
    if isinstance(fields.get("cost"), Mapping):
        fields["cost"] = ModelCost(**fields["cost"])
    return Model(**fields)
