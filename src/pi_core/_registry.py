"""The provider registry behind :func:`stream_simple`: one stream function per ``model.api``.

A provider registered for an api wins. Otherwise a model of an api that pi_core ships a provider
for reaches that provider without any registration: :data:`BUILT_IN_PROVIDERS` names each one
by module, and the registry imports it the first time a model of its api is streamed. (The core
cannot import the providers at import time: they import it, and they bring in the HTTP stack,
which ``import pi_core`` does not load.)
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Mapping
from typing import Final

import attrs

from ._events import AssistantMessageEvent, StreamError
from ._messages import Context, Model, failed_reply
from ._options import StreamFn, StreamOptions, StreamResult

__all__ = [
    "BUILT_IN_PROVIDERS",
    "BuiltInProvider",
    "built_in_stream",
    "get_provider",
    "register_provider",
    "stream_simple",
    "unregister_provider",
]

_providers: dict[str, StreamFn] = {}


@attrs.frozen
class BuiltInProvider:
    """A provider that ships with pi_core: where it lives and where it finds its key.

    None needs an extra: httpx, which they all use, is a dependency of pi_core itself.
    """

    api: str
    module: str
    stream_function: str
    """The name of its stream function in ``module``."""
    env_var: str
    """The environment variable it reads the key from when ``StreamOptions.api_key`` is unset."""


BUILT_IN_PROVIDERS: Final[Mapping[str, BuiltInProvider]] = {
    provider.api: provider
    for provider in (
        BuiltInProvider(
            "openai-completions", "pi_core.providers.openai", "stream_openai", "OPENAI_API_KEY"
        ),
        BuiltInProvider(
            "anthropic-messages",
            "pi_core.providers.anthropic",
            "stream_anthropic",
            "ANTHROPIC_API_KEY",
        ),
        BuiltInProvider(
            "openai-responses",
            "pi_core.providers.openai_responses",
            "stream_openai_responses",
            "OPENAI_API_KEY",
        ),
        BuiltInProvider(
            "google-generative-ai", "pi_core.providers.google", "stream_google", "GEMINI_API_KEY"
        ),
    )
}
"""The built-in providers by the ``api`` they serve."""

_loaded: dict[str, StreamFn] = {}
"""The stream functions of the built-in providers imported so far, by api."""


def register_provider(api: str, stream_fn: StreamFn) -> None:
    """Make ``stream_fn`` the provider of every model whose ``api`` is ``api`` (replacing any,
    a built-in one included)."""
    _providers[api] = stream_fn


def unregister_provider(api: str) -> None:
    """Forget the provider registered for ``api`` (a built-in one serves it again); unknown names
    are ignored."""
    _providers.pop(api, None)


def get_provider(api: str) -> StreamFn | None:
    """The stream function registered for ``api``, or ``None`` (built-in providers are not
    registered: see :func:`built_in_stream`)."""
    return _providers.get(api)


def built_in_stream(api: str) -> StreamFn | None:
    """The stream function of the built-in provider of ``api``, imported on first use, or
    ``None`` when pi_core ships none for it."""
    stream_fn = _loaded.get(api)
    if stream_fn is None:
        provider = BUILT_IN_PROVIDERS.get(api)
        if provider is None:
            return None
        module = importlib.import_module(provider.module)
        stream_fn = _loaded[api] = getattr(module, provider.stream_function)
    return stream_fn


def stream_simple(
    model: Model, context: Context, options: StreamOptions | None = None
) -> StreamResult:
    """Stream a reply from the provider registered for ``model.api``, else from pi_core's own
    provider of that api (see :data:`BUILT_IN_PROVIDERS`).

    With neither, the stream is a single :class:`StreamError` whose message says
    ``No API provider registered for api: <api>``, followed by how to register one.
    """
    stream_fn = _providers.get(model.api) or built_in_stream(model.api)
    if stream_fn is None:
        return _no_provider(model)
    return stream_fn(model, context, options if options is not None else StreamOptions())


async def _no_provider(model: Model) -> AsyncIterator[AssistantMessageEvent]:
    message = failed_reply(model, "error", no_provider_text(model.api))
    yield StreamError("error", message)


def no_provider_text(api: str) -> str:
    """The error for a model whose ``api`` has no provider, saying how to register one."""
    return (
        f"No API provider registered for api: {api} (register a stream function with "
        "pi_core.register_provider(api, stream_fn), or give the Agent a stream_fn; pi_core's own "
        f"providers serve {', '.join(sorted(BUILT_IN_PROVIDERS))})"
    )
