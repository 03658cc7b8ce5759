"""The provider registry behind :func:`stream_simple`: one stream function per ``model.api``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ._events import AssistantMessageEvent, StreamError
from ._messages import Context, Model, failed_reply
from ._options import StreamFn, StreamOptions, StreamResult

__all__ = ["get_provider", "register_provider", "stream_simple", "unregister_provider"]

_providers: dict[str, StreamFn] = {}


def register_provider(api: str, stream_fn: StreamFn) -> None:
    """Make ``stream_fn`` the provider of every model whose ``api`` is ``api`` (replacing any)."""
    _providers[api] = stream_fn


def unregister_provider(api: str) -> None:
    """Forget the provider of ``api``; unknown names are ignored."""
    _providers.pop(api, None)


def get_provider(api: str) -> StreamFn | None:
    """The stream function registered for ``api``, or ``None``."""
    return _providers.get(api)


def stream_simple(
    model: Model, context: Context, options: StreamOptions | None = None
) -> StreamResult:
    """Stream a reply from the provider registered for ``model.api``.

    With no provider registered the stream is a single :class:`StreamError` whose message says
    ``No API provider registered for api: <api>``, followed by how to register one.
    """
    stream_fn = _providers.get(model.api)
    if stream_fn is None:
        return _no_provider(model)
    return stream_fn(model, context, options if options is not None else StreamOptions())


async def _no_provider(model: Model) -> AsyncIterator[AssistantMessageEvent]:
    message = failed_reply(model, "error", no_provider_text(model.api))
    yield StreamError("error", message)


# The providers that ship with pi_core, by the ``api`` they serve (their modules' ``API``): the
# registry cannot import them, since they import it.
_BUILT_IN = {
    "openai-completions": "pi_core.providers.openai",
    "anthropic-messages": "pi_core.providers.anthropic",
}


def no_provider_text(api: str) -> str:
    """The error for a model whose ``api`` has no provider, saying how to register one."""
    module = _BUILT_IN.get(api)
    if module is not None:
        hint = f"call {module}.register() once at startup"
    else:
        hint = "register a stream function with pi_core.register_provider(api, stream_fn)"
    return f"No API provider registered for api: {api} ({hint}, or give the Agent a stream_fn)"
