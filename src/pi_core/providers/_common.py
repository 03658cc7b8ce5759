"""What the HTTP providers share: API keys, headers, cost, error texts, abort and the SSE driver.

The driver :func:`stream_sse` owns everything between a request and the terminal event: it sends
the request, checks the status, decodes server-sent events, hands each one to a provider's
:class:`EventMapper`, and turns every failure into a ``StreamError``. It never yields inside a
cancel scope: the request is an ``HttpCall`` (``pi_core._http``), whose every await on the network
gets its own short scope, so an abort or a timeout stops the request at once without a scope
leaking into the consumer's code between events.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import anyio
import attrs
import httpx
from httpx_sse import ServerSentEvent

from .._events import AssistantMessageEvent
from .._exceptions import ProviderError
from .._http import (
    HttpCall,
    RequestAborted,
    RequestGuard,
    RequestTimedOut,
    RetryPolicy,
    http_failure_text,
    is_http_stack_error,
)
from .._messages import Context, Model, ModelCost, Usage, UsageCost
from .._options import StreamOptions
from .._redact import (
    header_secrets,
    headers_repr,
    redact_credentials,
    redact_credentials_off_loop,
)
from .._registry import register_provider
from .._system import provider_transcript
from .._texts import REQUEST_ABORTED, clip, installed_version
from ._partial import PartialMessage
from ._sse import SSELimitExceeded, aiter_sse

__all__ = [
    "EventMapper",
    "RequestSpec",
    "StreamFailure",
    "describe_exception",
    "error_body_message",
    "http_error_message",
    "make_usage",
    "merge_headers",
    "parse_event_json",
    "register_stream",
    "require_api_key",
    "start_stream",
    "stream_sse",
    "transcript_context",
    "user_agent",
]

_MAX_BODY_TEXT = 500
_DRAIN_GRACE = 2.0


class StreamFailure(ProviderError):
    """A provider failure met while the request streams: its text is the ``StreamError``'s
    ``error_message`` as it is."""


@attrs.frozen
class RequestSpec:
    """The one POST a provider makes: where, with which headers, with which JSON body."""

    url: str = attrs.field(repr=lambda url: repr(redact_credentials(url)))  # ?key=… in a URL
    headers: dict[str, str] = attrs.field(repr=headers_repr)
    body: dict[str, Any]

    def encode(self) -> bytes:
        """The body as UTF-8 JSON; a lone surrogate (from a broken paste) becomes ``?`` instead of
        failing the request or being rejected by the provider's JSON parser."""
        return json.dumps(self.body, ensure_ascii=False).encode("utf-8", "replace")


class EventMapper(Protocol):
    """A provider's translation of its server-sent events into stream events."""

    @property
    def done(self) -> bool:
        """True once the provider's end-of-stream marker has arrived; reading stops then."""
        ...

    def feed(self, sse: ServerSentEvent) -> Iterable[AssistantMessageEvent]:
        """The events of one server-sent event. Raises :class:`StreamFailure` for an error."""
        ...

    def finish(self) -> Iterable[AssistantMessageEvent]:
        """The closing events after the last server-sent event.

        Raises :class:`StreamFailure` when the stream ended before the reply was complete.
        """
        ...


# --- small helpers ------------------------------------------------------------------------------


def require_api_key(model: Model, options: StreamOptions, env_var: str) -> str:
    """``options.api_key``, else the key's environment variable, without the whitespace around
    it (a key read from a file keeps its newline, which no header may carry).

    The variable is the one of ``model.provider`` when the catalogue knows that provider
    (``GROQ_API_KEY`` for a Groq model, which speaks the OpenAI api: never the OpenAI key, which
    must not reach another company's server), else ``env_var``, the api's own.

    Raises:
        ProviderError: neither is set; the message says how to provide one.
    """
    if not options.api_key:
        env_var = _key_variable(model.provider, env_var)
    api_key = (options.api_key or os.environ.get(env_var) or "").strip()
    if not api_key:
        raise ProviderError(
            f"No API key for provider {model.provider!r}: "
            f"pass StreamOptions(api_key=...) or set {env_var}"
        )
    return api_key


def _key_variable(provider: str, default: str) -> str:
    """The environment variable of ``provider``'s key if the catalogue knows it, else
    ``default``."""
    if provider in ("unknown", *_HOME_PROVIDERS):
        return default  # the api's own provider, or a model described by hand
    from ..models import api_key_env, get_providers  # the catalogue, on the first such model

    return api_key_env(provider) if provider in get_providers() else default


_HOME_PROVIDERS = ("openai", "anthropic", "google")
"""The providers whose key variable is the one their api's module names."""


@functools.cache
def user_agent() -> str:
    """pi_core's own ``User-Agent``: its version, the platform, Python's version and the
    machine (``pi_core/1.2.0 (linux; python/3.12.3; x86_64)``), so that a provider can tell
    its traffic apart from httpx's or an SDK's."""
    import platform

    system = platform.system().lower() or "unknown"
    return f"pi_core/{installed_version()} ({system}; python/{platform.python_version()}; {platform.machine()})"


PROMPT_CACHE_KEY_LIMIT = 64
"""The longest ``prompt_cache_key`` OpenAI takes, in characters."""


def prompt_cache_key(session_id: str) -> str:
    """``session_id`` as an OpenAI ``prompt_cache_key``: cut to the characters OpenAI takes (a
    longer key is refused)."""
    return session_id[:PROMPT_CACHE_KEY_LIMIT]


def transcript_context(context: Context, *, mid_conversation: bool = False) -> Context:
    """``context`` as a provider sends it: the system prompt its system messages declare at the
    end (the leading one rendered with its sections, later ones folded in), the tools they
    declare, and the other messages. With ``mid_conversation`` (a model that takes system
    messages mid-way) the later system messages stay in the messages, where they were, and the
    system prompt is the leading one's."""
    transcript = provider_transcript(context, mid_conversation=mid_conversation)
    return Context(transcript.system_prompt or None, transcript.messages, transcript.tools)


def merge_headers(*sources: Mapping[str, str] | None) -> dict[str, str]:
    """Merge header mappings left to right, later ones winning (names compare without case)."""
    merged: dict[str, tuple[str, str]] = {}
    for source in sources:
        for name, value in (source or {}).items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


def make_usage(
    model: Model,
    *,
    input: int,
    output: int,
    cache_read: int,
    cache_write: int,
    reasoning: int | None = None,
    cache_write_1h: int | None = None,
) -> Usage:
    """Token counts with their cost in dollars from ``model.cost`` (per million tokens).

    The prices are those of the highest tier whose ``inputTokensAbove`` the request's input
    (fresh, read and written) exceeds; tokens written to the cache for one hour
    (``cache_write_1h``, part of ``cache_write``) cost twice the input price, as Anthropic bills
    them. The arithmetic is the TypeScript original's, to the last bit of the float.
    """
    price = _rates(model.cost, input + cache_read + cache_write)
    long_write = cache_write_1h or 0
    cost = UsageCost(
        input=(price.input / 1e6) * input,
        output=(price.output / 1e6) * output,
        cache_read=(price.cache_read / 1e6) * cache_read,
        cache_write=(price.cache_write * (cache_write - long_write) + price.input * 2 * long_write)
        / 1e6,
        total_from_provider=False,  # the catalogue's estimate, until a provider bills otherwise
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    total = input + output + cache_read + cache_write
    return Usage(
        input,
        output,
        cache_read,
        cache_write,
        total,
        cost,
        reasoning=reasoning,
        cache_write_1h=cache_write_1h,
    )


def _rates(cost: ModelCost, input_tokens: int) -> ModelCost:
    """``cost``, or the tier of it that applies above ``input_tokens``."""
    best, threshold = cost, -1.0
    for tier in cost.tiers or ():
        above = tier.get("inputTokensAbove", 0)
        if input_tokens > above > threshold:
            best = ModelCost(
                tier.get("input", 0.0),
                tier.get("output", 0.0),
                tier.get("cacheRead", 0.0),
                tier.get("cacheWrite", 0.0),
            )
            threshold = above
    return best


def parse_event_json(sse: ServerSentEvent) -> dict[str, Any]:
    """The JSON object in an event's data; :class:`StreamFailure` if it is anything else."""
    try:
        value = json.loads(sse.data)
    except ValueError as exc:
        raise StreamFailure(f"Malformed stream data: {exc} in {clip(sse.data, 200)!r}") from None
    if not isinstance(value, dict):
        raise StreamFailure(
            f"Malformed stream data: expected a JSON object in {clip(sse.data, 200)!r}"
        )
    return value


def error_body_message(data: object) -> str | None:
    """The human-readable message in a provider's error JSON, if there is one.

    Understands ``{"error": {"message": ...}}`` (OpenAI, Anthropic, OpenRouter),
    ``{"error": "..."}``, ``{"message": ...}`` (vLLM) and ``{"detail": ...}``.
    """
    if isinstance(data, list) and data:
        return error_body_message(data[0])
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        return error_body_message(error)
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def http_error_message(status_code: int, body: bytes) -> str:
    """``"<status> <phrase>: <message>"``, the message read from the body when it has one."""
    head = f"{status_code} {httpx.codes.get_reason_phrase(status_code)}".strip()
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return head
    try:
        detail = error_body_message(json.loads(text))
    except ValueError:
        detail = None
    return f"{head}: {detail or clip(text, _MAX_BODY_TEXT)}"


def describe_exception(exc: BaseException) -> str:
    """A clear one-line text for a transport failure or an unexpected error.

    The HTTP stack's own texts are never used (see :func:`~pi_core._http.http_failure_text`).
    """
    if isinstance(exc, (ProviderError, SSELimitExceeded)):
        return str(exc)
    if is_http_stack_error(exc):
        return http_failure_text(exc)
    return f"{type(exc).__name__}{_colon(exc)}"


def _colon(exc: BaseException) -> str:
    text = str(exc)
    return f": {text}" if text else ""


# --- the driver ---------------------------------------------------------------------------------


async def stream_sse(
    partial: PartialMessage,
    prepare: Callable[[], RequestSpec],
    mapper: EventMapper,
    options: StreamOptions,
    client: httpx.AsyncClient | None,
) -> AsyncIterator[AssistantMessageEvent]:
    """Run one streaming request and yield the stream protocol for it.

    ``prepare`` builds the request (a :class:`ProviderError` it raises is reported like any
    other failure). ``StreamStart`` comes once the server has answered with a success status; a failure
    before that gives a lone ``StreamError``. Nothing is raised except cancellation from outside.
    """
    # One function on purpose: the response and the SSE iterator must be closed by this
    # generator's own ``finally``, not by a nested generator left to the garbage collector.
    guard = RequestGuard(options.signal, options.timeout)
    call = HttpCall(guard, client, RetryPolicy(options.max_retries, options.max_retry_delay))
    spec: RequestSpec | None = None
    try:
        guard.check()
        spec = prepare()
        await call.send(spec.url, spec.headers, spec.encode())
        await _check_response(call)
        yield partial.start()
        assert call.response is not None
        sse_events = call.read_body(aiter_sse(call.response.aiter_bytes()))
        while (sse := await call.next(sse_events)) is not None:
            for event in _mapped(mapper, sse):
                yield event
            if mapper.done:
                await _drain(call, sse_events)
                break
        for event in mapper.finish():
            yield event
        yield partial.done()
    except RequestAborted:
        yield partial.fail("aborted", REQUEST_ABORTED)
    except RequestTimedOut:
        yield partial.fail("error", guard.timed_out_text())
    except Exception as exc:  # the protocol: failures are events, never exceptions
        # An upstream's error may quote the key it refused (so the request's own are searched
        # for), or a model id built to make a scrubber backtrack: redaction is linear, and off
        # the event loop for a long text.
        secrets = header_secrets(spec.headers) if spec is not None else []
        text = await redact_credentials_off_loop(describe_exception(exc), secrets)
        yield partial.fail("error", text)
    finally:
        await call.close()


def _mapped(mapper: EventMapper, sse: ServerSentEvent) -> Iterator[AssistantMessageEvent]:
    """``mapper.feed(sse)``, a lookup or type error in it reported as malformed data (a field
    of an unexpected shape) rather than as a bare ``KeyError``."""
    try:
        yield from mapper.feed(sse)
    except StreamFailure:
        raise
    except (LookupError, TypeError, AttributeError, ValueError) as exc:
        raise StreamFailure(
            f"Malformed stream data: {type(exc).__name__}: {exc} in {clip(sse.data, 200)!r}"
        ) from exc


async def _drain(call: HttpCall, events: AsyncIterator[ServerSentEvent]) -> None:
    """Read on after the end marker to the end of the body, so the connection can be reused.

    Servers end the body right after the marker; one that keeps it open gets
    ``_DRAIN_GRACE`` seconds. Events after the marker are ignored.
    """
    with anyio.move_on_after(_DRAIN_GRACE):
        while await call.next(events) is not None:
            pass


async def _check_response(call: HttpCall) -> None:
    """Raise :class:`StreamFailure` for an error status or a body that is not an event stream."""
    response = call.response
    assert response is not None
    if response.is_success and _is_event_stream(response):
        return
    body = await call.read_error_body()
    if not response.is_success:
        message = http_error_message(response.status_code, body)
        note = f" ({call.retry_note})" if call.retry_note else ""
        raise StreamFailure(message + note)
    # Some servers answer 200 with a JSON error instead of a stream.
    content_type = response.headers.get("content-type", "")
    try:
        detail = error_body_message(json.loads(body))
    except ValueError:
        detail = None
    raise StreamFailure(
        detail
        or f"Expected an event stream, got {content_type or 'no content type'}: "
        f"{clip(body.decode('utf-8', 'replace'), _MAX_BODY_TEXT)}"
    )


def _is_event_stream(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


# --- a provider's entry points ------------------------------------------------------------------


def start_stream(
    model: Model,
    context: Context,
    options: StreamOptions | None,
    client: httpx.AsyncClient | None,
    build_request: Callable[[Model, Context, StreamOptions, str], RequestSpec],
    mapper: Callable[[PartialMessage, Model], EventMapper],
    *,
    api_key_env: str,
) -> AsyncIterator[AssistantMessageEvent]:
    """The stream of one provider call: the request is built (by ``build_request``, with the
    API key) when the stream is first iterated, and ``mapper`` reads the server's events into
    the reply.

    Raises:
        ProviderError: no API key in ``options`` or ``api_key_env``, before any request.
    """
    opts = options if options is not None else StreamOptions()
    api_key = require_api_key(model, opts, api_key_env)
    partial = PartialMessage(model)
    prepare = functools.partial(build_request, model, context, opts, api_key)
    return stream_sse(partial, prepare, mapper(partial, model), opts, client)


def register_stream(
    api: str,
    stream_fn: Callable[..., AsyncIterator[AssistantMessageEvent]],
    client: httpx.AsyncClient | None,
) -> None:
    """Register a provider's ``stream_fn`` (which takes a ``client`` keyword) for ``api``; with
    ``client``, every call of the registry goes through that client."""
    bound = stream_fn if client is None else functools.partial(stream_fn, client=client)
    register_provider(api, bound)
