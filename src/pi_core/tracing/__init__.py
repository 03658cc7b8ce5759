"""OpenTelemetry tracing of runs, after the GenAI semantic conventions (the ``otel`` extra).

Only ``opentelemetry-api`` is used: bring the SDK and an exporter of your choice. Every traced
run is an ``invoke_agent`` span; each model call a ``chat {model id}`` span and each tool call an
``execute_tool {tool name}`` span under it. Each span is the current one while its work runs,
so spans made inside a stream function or a tool (an instrumented HTTP client, a database call)
nest under it, on trio and on asyncio. Message contents are recorded only with
``capture_content=True``. Nothing here is imported, or costs anything, unless it is used.
"""

from __future__ import annotations

import attrs
from opentelemetry import trace

from .. import Agent, AgentLoopConfig
from .._public import publish_module_names
from ._otel import OpenTelemetryTracer

__all__ = ("instrument", "instrument_config")

_INSTRUMENTATION = "pi_core"


def _tracer(
    tracer_provider: trace.TracerProvider | None, capture_content: bool
) -> OpenTelemetryTracer:
    tracer = trace.get_tracer(_INSTRUMENTATION, tracer_provider=tracer_provider)
    return OpenTelemetryTracer(tracer, capture_content)


def instrument(
    agent: Agent,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    capture_content: bool = False,
) -> None:
    """Trace every later run of ``agent`` (it sets :attr:`Agent.tracer`).

    Args:
        agent: the agent to trace.
        tracer_provider: where the spans go; the global tracer provider when ``None``.
        capture_content: also record the messages sent and received, tool arguments and
            results (they may hold sensitive data).
    """
    agent.tracer = _tracer(tracer_provider, capture_content)


def instrument_config(
    config: AgentLoopConfig,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    capture_content: bool = False,
) -> AgentLoopConfig:
    """A copy of ``config`` whose runs (through the loop functions) are traced.

    Args:
        config: the loop configuration to copy.
        tracer_provider: where the spans go; the global tracer provider when ``None``.
        capture_content: also record message contents, tool arguments and results.
    """
    return attrs.evolve(config, tracer=_tracer(tracer_provider, capture_content))


publish_module_names(globals(), __all__, __name__)
