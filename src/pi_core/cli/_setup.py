"""From command-line settings to a ready :class:`Agent`: provider, model, key, tools."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal
from urllib.parse import urlparse

import attrs

from .. import (
    Agent,
    AgentTool,
    Model,
    StreamFn,
    StreamOptions,
    ThinkingLevel,
    ToolExecution,
    agent_tool,
)
from ..lowlevel import BUILT_IN_PROVIDERS, built_in_stream
from ..models import ModelNotFoundError, api_key_env, get_model
from ._demo import DEMO_API, DEMO_MODEL_ID, DEMO_TOKENS_PER_SECOND, DemoModel
from ._tools import make_demo_tools

__all__ = [
    "DEFAULT_APIS",
    "DEFAULT_PROXY_TOKEN_ENV",
    "DEFAULT_SYSTEM_PROMPT",
    "PROVIDERS",
    "AgentSettings",
    "Connection",
    "UsageError",
    "build_agent",
    "connect",
]

Provider = Literal["faux", "catalogue", "openai", "anthropic", "proxy"]
PROVIDERS: tuple[Provider, ...] = ("faux", "catalogue", "openai", "anthropic", "proxy")
DEFAULT_APIS = {"openai": "openai-completions", "anthropic": "anthropic-messages"}
OPENAI_API_HOST = "api.openai.com"
"""The api of a model that ``--provider`` names and the catalogue does not have."""
DEFAULT_PROXY_TOKEN_ENV = "PI_CORE_PROXY_TOKEN"
DEFAULT_SYSTEM_PROMPT = (
    "You are the pi-core demo assistant. Use the tools when they help: calculate for arithmetic, "
    "read_file and list_dir for files in the working directory, now for the time, sleep to wait, "
    "research to hand a task to a helper with the same tools. Answer briefly."
)
RESEARCH_SYSTEM_PROMPT = (
    "You are a pi-core research helper. Do the task you are given with the tools, then report "
    "what you found in a few lines."
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
    settings: AgentSettings, root: str = ".", mcp_servers: Sequence[Sequence[AgentTool]] = ()
) -> tuple[Agent, str]:
    """The agent the settings describe, with the built-in tools (then those of each MCP server
    of ``mcp_servers``, then ``research``: a sub-agent with all of those), and a one-line
    description.

    Raises:
        UsageError: the provider cannot be used as configured (no model, no key …).
    """
    connection = connect(settings, [[tool.name for tool in tools] for tools in mcp_servers])
    base = [*make_demo_tools(root), *(tool for tools in mcp_servers for tool in tools)]

    def make_agent(system_prompt: str, tools: Sequence[AgentTool]) -> Agent:
        return Agent(
            system_prompt=system_prompt,
            model=connection.model,
            stream_fn=connection.stream_fn,
            thinking_level=settings.thinking,
            tools=tools,
            tool_execution=settings.tool_execution,
            options=connection.options,
        )

    research = agent_tool(
        lambda _args: make_agent(RESEARCH_SYSTEM_PROMPT, base),
        name="research",
        description="Hand a task to a helper agent with the same tools; it answers with a report.",
    )
    tools = [*base, research]
    system = settings.system if settings.system is not None else DEFAULT_SYSTEM_PROMPT
    agent = make_agent(system, tools)
    names = ", ".join(tool.name for tool in tools)
    return agent, f"pi-core · {connection.label} · tools: {names}"


def connect(settings: AgentSettings, mcp_servers: Sequence[Sequence[str]] = ()) -> Connection:
    """The model and stream function of ``settings.provider``; the demo model is told the tool
    names of each MCP server.

    Raises:
        UsageError: see :func:`build_agent`.
    """
    if settings.provider == "faux":
        return _demo(settings, mcp_servers)
    if settings.provider == "proxy":
        return _proxy(settings)
    return _direct(settings)


def _demo(settings: AgentSettings, mcp_servers: Sequence[Sequence[str]]) -> Connection:
    # JSON output is for programs, which gain nothing from watching text appear slowly.
    pace = None if settings.json else DEMO_TOKENS_PER_SECOND
    demo = DemoModel(tokens_per_second=pace, mcp_servers=mcp_servers)
    return Connection(
        demo.model, demo.stream, StreamOptions(), f"{DEMO_MODEL_ID} (built-in demo model)"
    )


def _direct(settings: AgentSettings) -> Connection:
    model = _direct_model(settings)
    stream_fn = _stream_fn(model.api)
    key = _api_key(settings.api_key_env or api_key_env(model.provider))
    model = _own_server(model)
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
        try:
            model = get_model(model_id)
        except ModelNotFoundError as exc:
            raise UsageError(str(exc)) from None
    else:
        model = _known_or_described(settings.provider, model_id, settings.thinking != "off")
    return attrs.evolve(
        model, api=settings.api or model.api, base_url=settings.base_url or model.base_url
    )


def _own_server(model: Model) -> Model:
    """``--provider openai`` with a ``--base-url`` elsewhere than OpenAI's API names a server of
    one's own (Ollama, vLLM, llama.cpp …): the model takes the server's host as its provider, so
    that requests speak what such servers understand (``system`` role, ``max_tokens``, no
    ``null`` content) or the dialect of the hosted service the address names."""
    if model.provider != "openai" or not model.base_url or OPENAI_API_HOST in model.base_url:
        return model
    return attrs.evolve(model, provider=urlparse(model.base_url).hostname or "local")


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
    stream_fn = built_in_stream(api)
    if stream_fn is None:
        served = ", ".join(sorted(BUILT_IN_PROVIDERS))
        raise UsageError(f"pi-core has no provider for api {api!r} (it serves {served})")
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
