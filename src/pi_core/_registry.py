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
    ``No API provider registered for api: <api>``.
    """
    stream_fn = _providers.get(model.api)
    if stream_fn is None:
        return _no_provider(model)
    return stream_fn(model, context, options if options is not None else StreamOptions())


async def _no_provider(model: Model) -> AsyncIterator[AssistantMessageEvent]:
    message = failed_reply(model, "error", f"No API provider registered for api: {model.api}")
    yield StreamError("error", message)
