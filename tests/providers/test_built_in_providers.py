"""The table of pi_core's own providers: true to their modules, imported on demand and found by
api without registration, documented."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Awaitable
from pathlib import Path

import anyio
import pytest
from _replay_server import Reply, open_replay_server
from _stream_checks import collect, final_message

import pi_core.providers
from pi_core import Context, Model, StreamOptions, UserMessage, stream_simple
from pi_core._registry import (
    BUILT_IN_PROVIDERS,
    BuiltInProvider,
    built_in_stream,
    get_provider,
    no_provider_text,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("row", list(BUILT_IN_PROVIDERS.values()), ids=lambda row: row.api)
def test_each_row_is_true_to_its_module(row: BuiltInProvider) -> None:
    module = importlib.import_module(row.module)
    assert (row.api, row.env_var) == (module.API, module.ENV_API_KEY)
    assert built_in_stream(row.api) is getattr(module, row.stream_function)


def test_every_provider_module_with_an_api_is_in_the_table() -> None:
    apis = {}
    for info in pkgutil.iter_modules(pi_core.providers.__path__):
        if info.name.startswith("_") or info.name == "faux":  # faux is made per use, not shipped
            continue
        module = importlib.import_module(f"pi_core.providers.{info.name}")
        apis[module.API] = module.__name__
    assert apis == {row.api: row.module for row in BUILT_IN_PROVIDERS.values()}


def test_a_provider_is_imported_when_its_api_is_first_asked_for_and_not_before() -> None:
    code = """
import sys
import pi_core
from pi_core._registry import built_in_stream

loaded = lambda: sorted(m for m in sys.modules if m.startswith(("pi_core.providers.", "httpx")))
assert loaded() == [], loaded()
assert built_in_stream("no-such-api") is None
built_in_stream("anthropic-messages")
assert "pi_core.providers.anthropic" in sys.modules
assert "pi_core.providers.openai" not in sys.modules
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr


ENDPOINTS = {
    "openai-completions": "/chat/completions",
    "anthropic-messages": "/v1/messages",
    "openai-responses": "/responses",
    "google-generative-ai": "/models/m-1:streamGenerateContent",
}
"""Where each built-in provider sends a request for model ``m-1`` at the server's root."""


@pytest.mark.parametrize("api", sorted(BUILT_IN_PROVIDERS))
async def test_stream_simple_reaches_each_built_in_provider_without_register(
    api: str, anyio_backend: str
) -> None:
    assert get_provider(api) is None
    refusal = Reply(status=400, content_type="application/json", chunks=[b'{"error": "no"}'])
    async with open_replay_server([refusal], anyio_backend) as server:
        model = Model("m-1", api=api, provider="test", base_url=server.base_url)
        stream = stream_simple(model, Context("", [UserMessage("Hi")]), StreamOptions(api_key="k"))
        assert not isinstance(stream, Awaitable)
        with anyio.fail_after(10):
            events = await collect(stream)
        [request] = server.requests
    assert request.path == ENDPOINTS[api]  # the provider's own request: it was found by api
    assert final_message(events).stop_reason == "error"


def test_the_missing_provider_hint_names_every_built_in_api() -> None:
    assert no_provider_text("bedrock-converse-stream") == (
        "No API provider registered for api: bedrock-converse-stream (register a stream function "
        "with pi_core.register_provider(api, stream_fn), or give the Agent a stream_fn; pi_core's "
        "own providers serve anthropic-messages, google-generative-ai, openai-completions, "
        "openai-responses)"
    )


def test_the_providers_page_shows_the_table() -> None:
    page = (DOCS / "providers.md").read_text(encoding="utf-8")
    for row in BUILT_IN_PROVIDERS.values():
        assert f"| `{row.api}` | `{row.module}` | `{row.env_var}` |" in page
