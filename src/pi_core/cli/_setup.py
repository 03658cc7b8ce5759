"""From command-line settings to a ready :class:`Agent`: provider, model, key, tools."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Literal

import attrs

from .._agent import Agent
from .._hooks import ToolExecution
from .._messages import Model, ThinkingLevel
from .._options import StreamFn, StreamOptions
from .._tools import AgentTool
from ..models import ModelNotFoundError, api_key_env, get_model
from ._demo import DEMO_API, DEMO_MODEL_ID, DEMO_TOKENS_PER_SECOND, DemoModel
from ._tools import make_demo_tools

__all__ = [
    "DEFAULT_APIS",
    "DEFAULT_PROXY_TOKEN_ENV",
    "DEFAULT_SYSTEM_PROMPT",
    "PROVIDERS",
    "STREAM_FUNCTIONS",
    "AgentSettings",
    "Connection",
    "UsageError",
    "build_agent",
    "connect",
]

Provider = Literal["faux", "catalogue", "openai", "anthropic", "proxy"]
PROVIDERS: tuple[Provider, ...] = ("faux", "catalogue", "openai", "anthropic", "proxy")
DEFAULT_APIS = {"openai": "openai-completions", "anthropic": "anthropic-messages"}
"""The api of a model that ``--provider`` names and the catalogue does not have."""
STREAM_FUNCTIONS = {
    "openai-completions": ("pi_core.providers.openai", "stream_openai"),
    "anthropic-messages": ("pi_core.providers.anthropic", "stream_anthropic"),
    "openai-responses": ("pi_core.providers.openai_responses", "stream_openai_responses"),
    "google-generative-ai": ("pi_core.providers.google", "stream_google"),
}
"""Where the stream function of each api that the CLI can use lives (imported when used)."""
DEFAULT_PROXY_TOKEN_ENV = "PI_CORE_PROXY_TOKEN"
DEFAULT_SYSTEM_PROMPT = (
    "You are the pi-core demo assistant. Use the tools when they help: calculate for arithmetic, "
    "read_file and list_dir for files in the working directory, now for the time, sleep to wait. "
    "Answer briefly."
)


class UsageError(Exception):
    """The command line asks for something impossible; the CLI exits with status 2."""


@attrs.frozen
class AgentSettings:
    """The agent options shared by ``run`` and ``chat``."""

    provider: Provider = "faux"
    model: str | None = None
    api: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    system: str | None = None
    thinking: ThinkingLevel = "off"
    tool_execution: ToolExecution = "parallel"
    json: bool = False
    timeout: float | None = None
    """Seconds for each model request (``StreamOptions.timeout``)."""
    json_compact: bool = False
    """With ``json``: message_update events in the proxy's compact form."""
    mcp: tuple[str, ...] = ()
    """Command lines of MCP servers to start (``--mcp``)."""
    mcp_urls: tuple[str, ...] = ()
    """URLs of streamable-HTTP MCP servers (``--mcp-url``)."""


@attrs.frozen
class Connection:
    """How to reach a model: the model, its stream function and the per-call options."""

    model: Model
    stream_fn: StreamFn
    options: StreamOptions
    label: str


def build_agent(
    settings: AgentSettings, root: str = ".", extra_tools: Sequence[AgentTool] = ()
) -> tuple[Agent, str]:
    """The agent the settings describe, with the built-in tools (then ``extra_tools``), and a
    one-line description.

    Raises:
        UsageError: the provider cannot be used as configured (no model, no key …).
    """
    connection = connect(settings)
    tools = [*make_demo_tools(root), *extra_tools]
    agent = Agent(
        system_prompt=settings.system if settings.system is not None else DEFAULT_SYSTEM_PROMPT,
        model=connection.model,
        stream_fn=connection.stream_fn,
        thinking_level=settings.thinking,
        tools=tools,
        tool_execution=settings.tool_execution,
        options=connection.options,
    )
    names = ", ".join(tool.name for tool in tools)
    return agent, f"pi-core · {connection.label} · tools: {names}"


def connect(settings: AgentSettings) -> Connection:
    """The model and stream function of ``settings.provider``.

    Raises:
        UsageError: see :func:`build_agent`.
    """
    if settings.provider == "faux":
        return _demo(settings)
    if settings.provider == "proxy":
        return _proxy(settings)
    return _direct(settings)


def _demo(settings: AgentSettings) -> Connection:
    # JSON output is for programs, which gain nothing from watching text appear slowly.
    demo = DemoModel(tokens_per_second=None if settings.json else DEMO_TOKENS_PER_SECOND)
    return Connection(
        demo.model, demo.stream, StreamOptions(), f"{DEMO_MODEL_ID} (built-in demo model)"
    )


def _direct(settings: AgentSettings) -> Connection:
    model = _direct_model(settings)
    stream_fn = _stream_fn(model.api)
    key = _api_key(settings.api_key_env or api_key_env(model.provider))
    label = f"{model.id} via {model.api}"
    if model.base_url:
        label += f" at {model.base_url}"
    options = StreamOptions(api_key=key, timeout=settings.timeout)
    return Connection(model, stream_fn, options, label)


def _direct_model(settings: AgentSettings) -> Model:
    """The model of ``--model provider/id`` from the catalogue; with ``--provider``, a model of
    that provider's api, its limits and prices taken from the catalogue when it knows the id.
    ``--api`` and ``--base-url`` override either."""
    model_id = _require(settings.model, "--model is required with --provider " + settings.provider)
    if settings.provider == "catalogue":
        provider, _, model_id = model_id.partition("/")
        if not model_id:
            raise UsageError("--model takes provider/id, e.g. anthropic/claude-sonnet-4-5")
        try:
            model = get_model(provider, model_id)
        except ModelNotFoundError as exc:
            raise UsageError(str(exc)) from None
    else:
        model = _known_or_described(settings.provider, model_id, settings.thinking != "off")
    return attrs.evolve(
        model, api=settings.api or model.api, base_url=settings.base_url or model.base_url
    )


def _known_or_described(provider: str, model_id: str, reasoning: bool) -> Model:
    """A model of ``provider``'s own api (``--provider openai`` means Chat Completions, as any
    OpenAI-compatible server speaks it), with the catalogue's facts when it has the id."""
    api = DEFAULT_APIS[provider]
    try:
        return attrs.evolve(get_model(provider, model_id), api=api)
    except ModelNotFoundError:
        return Model(model_id, api=api, provider=provider, reasoning=reasoning)


def _stream_fn(api: str) -> StreamFn:
    """The stream function of ``api`` among the providers pi_core ships."""
    where = STREAM_FUNCTIONS.get(api)
    if where is None:
        served = ", ".join(sorted(STREAM_FUNCTIONS))
        raise UsageError(f"pi-core has no provider for api {api!r} (it serves {served})")
    module = importlib.import_module(where[0])
    stream_fn: StreamFn = getattr(module, where[1])
    return stream_fn


def _proxy(settings: AgentSettings) -> Connection:
    try:
        from ..proxy import ProxyStream
    except ImportError:
        raise UsageError("--provider proxy needs pi_core.proxy, which is not available") from None
    url = _require(
        settings.base_url, "--base-url (the proxy's URL) is required with --provider proxy"
    )
    token = _api_key(settings.api_key_env or DEFAULT_PROXY_TOKEN_ENV)
    model_id = settings.model or DEMO_MODEL_ID
    api = settings.api or (DEMO_API if model_id == DEMO_MODEL_ID else None)
    api = _require(api, "--api (the model's api on the proxy server) is required with --model")
    model = Model(model_id, api=api, provider="proxy", reasoning=settings.thinking != "off")
    stream_fn = ProxyStream(url, token)
    options = StreamOptions(timeout=settings.timeout)
    return Connection(model, stream_fn, options, f"{model_id} ({api}) via proxy {url}")


def _require(value: str | None, message: str) -> str:
    if not value:
        raise UsageError(message)
    return value


def _api_key(env_var: str) -> str:
    key = os.environ.get(env_var)
    if not key:
        raise UsageError(f"no API key: the environment variable {env_var} is not set")
    return key
