"""The OpenTelemetry side of the loop's tracing seam: spans for runs, model and tool calls."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .. import (
    AgentEvent,
    AssistantMessage,
    Context,
    MessageEnd,
    Model,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from ..lowlevel import exception_text
from ..nursery import AbortSignal
from ._content import (
    finish_reason,
    input_messages,
    output_messages,
    system_instructions,
    to_json,
    tool_result_text,
)

__all__ = ["OpenTelemetryTracer"]

_OPERATION = "gen_ai.operation.name"


class OpenTelemetryTracer:
    """A :class:`~pi_core.RunTracer` that records runs as OpenTelemetry spans."""

    __slots__ = ("_capture_content", "_tracer")

    def __init__(self, tracer: trace.Tracer, capture_content: bool) -> None:
        self._tracer = tracer
        self._capture_content = capture_content

    def trace_run(self, model: Model, signal: AbortSignal) -> _RunTrace:
        """The trace of a run about to start."""
        return _RunTrace(self._tracer, self._capture_content, model, signal)


class _Current:
    """Makes a span the current one while the block runs, in the task that enters it."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span | None) -> None:
        self._span = span
        self._token: object = None

    def __enter__(self) -> None:
        if self._span is not None:
            self._token = otel_context.attach(trace.set_span_in_context(self._span))

    def __exit__(self, *_exc: object) -> None:
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]


class _RunTrace:
    """One run: the ``invoke_agent`` span, its ``chat`` and ``execute_tool`` children."""

    def __init__(
        self, tracer: trace.Tracer, capture_content: bool, model: Model, signal: AbortSignal
    ) -> None:
        self._tracer = tracer
        self._capture = capture_content
        self._signal = signal
        self._span = tracer.start_span(
            "invoke_agent",
            kind=SpanKind.INTERNAL,
            attributes={
                _OPERATION: "invoke_agent",
                "gen_ai.provider.name": model.provider,
                "gen_ai.request.model": model.id,
            },
        )
        self._context = trace.set_span_in_context(self._span)
        self._current = _Current(self._span)
        self._chat: Span | None = None
        self._tools: dict[str, Span] = {}
        self._last_reply: AssistantMessage | None = None

    # --- the run --------------------------------------------------------------------------------

    def __enter__(self) -> _RunTrace:
        self._current.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._current.__exit__()
        span = self._span
        reply = self._last_reply
        if isinstance(exc, Exception):
            _fail(span, exc)
        elif self._signal.aborted or (reply is not None and reply.stop_reason == "aborted"):
            span.set_attribute("aborted", True)
        elif reply is not None and reply.stop_reason == "error":
            _set_error(span, reply.error_message or "error")
        # A failure or a cancellation from outside ends a run without the events that would
        # end these: end them with the run.
        for open_span in (self._chat, *self._tools.values()):
            if open_span is not None:
                open_span.end()
        span.end()

    def on_event(self, event: AgentEvent) -> None:
        """Start and end the spans the events delimit."""
        if isinstance(event, ToolExecutionStart):
            self._start_tool(event)
        elif isinstance(event, ToolExecutionEnd):
            self._end_tool(event)
        elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
            self._end_chat(event.message)

    # --- model calls ----------------------------------------------------------------------------

    def model_call(self, model: Model, context: Context) -> _ModelCall:
        """The ``chat {model}`` span, current while the model streams."""
        attributes: dict[str, Any] = {
            _OPERATION: "chat",
            "gen_ai.provider.name": model.provider,
            "gen_ai.request.model": model.id,
        }
        if self._capture:
            attributes["gen_ai.input.messages"] = input_messages(context)
            instructions = system_instructions(context)
            if instructions is not None:
                attributes["gen_ai.system_instructions"] = instructions
        span = self._tracer.start_span(
            f"chat {model.id}", self._context, kind=SpanKind.CLIENT, attributes=attributes
        )
        self._chat = span
        return _ModelCall(span)

    def _end_chat(self, message: AssistantMessage) -> None:
        self._last_reply = message
        span = self._chat
        if span is None:  # an abort before the call: no model was called
            return
        self._chat = None
        usage = message.usage
        span.set_attributes(
            {
                "gen_ai.response.model": message.response_model or message.model,
                "gen_ai.response.finish_reasons": [finish_reason(message.stop_reason)],
                "gen_ai.usage.input_tokens": usage.input + usage.cache_read + usage.cache_write,
                "gen_ai.usage.output_tokens": usage.output,
            }
        )
        if message.response_id is not None:
            span.set_attribute("gen_ai.response.id", message.response_id)
        if self._capture:
            span.set_attribute("gen_ai.output.messages", output_messages(message))
        if message.stop_reason == "error":
            _set_error(span, message.error_message or "error")
        span.end()

    # --- tool calls -----------------------------------------------------------------------------

    def tool_call(self, tool_call: ToolCall) -> _Current:
        """The call's ``execute_tool`` span, current while the tool runs."""
        return _Current(self._tools.get(tool_call.id))

    def _start_tool(self, event: ToolExecutionStart) -> None:
        attributes: dict[str, Any] = {
            _OPERATION: "execute_tool",
            "gen_ai.tool.name": event.tool_name,
            "gen_ai.tool.call.id": event.tool_call_id,
            "gen_ai.tool.type": "function",
        }
        if self._capture:
            attributes["gen_ai.tool.call.arguments"] = to_json(event.args)
        self._tools[event.tool_call_id] = self._tracer.start_span(
            f"execute_tool {event.tool_name}",
            self._context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )

    def _end_tool(self, event: ToolExecutionEnd) -> None:
        span = self._tools.pop(event.tool_call_id, None)
        if span is None:
            return
        text = tool_result_text(event.result)
        if self._capture:
            span.set_attribute("gen_ai.tool.call.result", text)
        if event.is_error:
            _set_error(span, text)
        span.end()


class _ModelCall(_Current):
    """The ``chat`` span's scope; it records what a failing stream function raised (the reply's
    ``message_end``, which follows, ends the span)."""

    __slots__ = ()

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__()
        exc = exc_info[1] if len(exc_info) > 1 else None
        if isinstance(exc, Exception) and self._span is not None:
            self._span.record_exception(exc)


def _set_error(span: Span, description: str) -> None:
    span.set_status(Status(StatusCode.ERROR, description))
    span.set_attribute("error.type", "_OTHER")


def _fail(span: Span, exc: Exception) -> None:
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, exception_text(exc)))
    span.set_attribute("error.type", type(exc).__qualname__)
