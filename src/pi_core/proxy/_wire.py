"""The proxy wire format of upstream's ``streamProxy``: the request body and the event lines.

The request is ``{model, context, options}`` in upstream's camelCase JSON (see
:mod:`pi_core.serialization`); ``options`` is the serializable subset of the stream options,
never the API key. ``context`` comes in two forms, one per era of upstream's client:

* ``"1.6"`` (1.6.0): ``{messages}``, the transcript alone, whose system messages carry the
  system prompt and the tool declarations;
* ``"0.73"`` (0.73.1): ``{systemPrompt, messages, tools}``, one prompt and one tool list beside
  messages that hold no system message.

The response is a stream of ``data: {json}\\n\\n`` lines, one provider stream event each,
without ``partial``:

* ``start``; ``text_start`` / ``thinking_start`` ``{contentIndex}``; ``text_delta`` /
  ``thinking_delta`` / ``toolcall_delta`` ``{contentIndex, delta}``; ``text_end`` /
  ``thinking_end`` ``{contentIndex, contentSignature?}``; ``toolcall_start`` ``{contentIndex, id,
  toolName}``; ``toolcall_end`` ``{contentIndex, toolCall}`` (the complete call);
* ``done`` ``{reason, usage, providerThinkingLevel?}`` and ``error`` ``{reason, errorMessage?,
  usage, providerThinkingLevel?}``.

:class:`WireEncoder` writes the lines on the server side; :class:`~._decode.WireDecoder` reads them
on the client side.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from .. import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Message,
    Model,
    ProxyError,
    StreamDone,
    StreamError,
    StreamStart,
    SystemMessage,
    TextContent,
    TextDelta,
    TextEnd,
    ThinkingContent,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingLevel,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    current_system_prompt,
    current_tools,
    normalize_context,
)
from .._options import CacheRetention, StreamOptions
from .._redact import redact_credentials
from ..nursery import AbortSignal
from ..serialization import dumps, to_dict

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = [
    "WIRES",
    "ProxyRequest",
    "ProxyWire",
    "WireEncoder",
    "WireOptions",
    "check_wire",
    "encode_request",
]

_DATA = b"data: "
_EVENT_END = b"\n\n"


# --- the request ---------------------------------------------------------------------------------


@attrs.frozen
class WireOptions:
    """The stream options a proxy request carries: what a server may take from its client.

    ``api_key`` and ``signal`` are not here on purpose: the server uses its own key and signal.
    Upstream's ``transport`` and ``maxRetryDelayMs`` are accepted on the wire and ignored.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: ThinkingLevel | None = None
    cache_retention: CacheRetention | None = None
    session_id: str | None = None
    headers: dict[str, str] | None = None
    metadata: dict[str, Any] | None = None
    thinking_budgets: dict[str, int] | None = None

    @classmethod
    def from_stream_options(cls, options: StreamOptions) -> WireOptions:
        """The serializable subset of ``options``; ``"off"`` is sent as no reasoning at all,
        since upstream's wire knows only the levels that ask for some."""
        return cls(
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            reasoning=None if options.reasoning == "off" else options.reasoning,
            cache_retention=options.cache_retention,
            session_id=options.session_id,
            headers=_dict_or_none(options.headers),
            metadata=_dict_or_none(options.metadata),
            thinking_budgets=_dict_or_none(options.thinking_budgets),
        )

    def to_stream_options(self, signal: AbortSignal) -> StreamOptions:
        """Stream options for the server's provider call, with the server's own ``signal``."""
        return StreamOptions(
            session_id=self.session_id,
            reasoning=self.reasoning,
            thinking_budgets=self.thinking_budgets,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            headers=self.headers,
            metadata=self.metadata,
            cache_retention=self.cache_retention,
            signal=signal,
        )


@attrs.frozen
class ProxyRequest:
    """The JSON body of ``POST /api/stream``, read in either form."""

    model: Model
    context: Context
    options: WireOptions = WireOptions()


ProxyWire: TypeAlias = Literal["1.6", "0.73"]
"""The form of the request body: upstream 1.6.0's (the transcript alone) or 0.73.1's."""
WIRES: tuple[ProxyWire, ...] = ("1.6", "0.73")


@attrs.frozen
class _Transcript:
    """The 1.6.0 form of a request's context: ``{messages}``."""

    messages: list[Message]


@attrs.frozen
class _Request:
    """A request body as the client writes it, its context in the form it speaks."""

    model: Model
    context: Context | _Transcript
    options: WireOptions


def check_wire(wire: str) -> None:
    """Raise ``ValueError`` unless ``wire`` names a form of the request body."""
    if wire not in WIRES:
        raise ValueError(f"wire must be one of {', '.join(map(repr, WIRES))}, got {wire!r}")


def encode_request(
    model: Model, context: Context, options: StreamOptions, wire: ProxyWire = "1.6"
) -> bytes:
    """The request body for one call, as the client of the ``wire`` era writes it.

    Both forms say the same of a context: its ``system_prompt`` / ``tools`` shorthand is folded
    into the transcript first. The 0.73 form has room for one prompt and one tool list, so it
    carries those the transcript declares at its end, and the messages without the system
    messages that declared them.
    """
    messages = normalize_context(context).messages
    body: Context | _Transcript
    if wire == "1.6":
        body = _Transcript(messages)
    else:
        rest: list[Message] = [m for m in messages if not isinstance(m, SystemMessage)]
        prompt = current_system_prompt(messages)
        body = Context(prompt or None, rest, current_tools(messages))
    request = _Request(model, body, WireOptions.from_stream_options(options))
    return dumps(request).encode("utf-8", "replace")


def _dict_or_none(mapping: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if mapping is None else dict(mapping)


# --- the server side: events to lines ---------------------------------------------------------


class WireEncoder:
    """Writes the events of one provider stream as wire lines (``data: {json}\\n\\n``).

    After the terminal event (or :meth:`failure`) :attr:`finished` is true.
    """

    __slots__ = ("_redacted", "_streamed", "finished")

    def __init__(self, *, redacted: bool = False) -> None:
        self._redacted = redacted
        """Whether the error texts it is given are redacted already (else it redacts them)."""
        self._streamed: set[int] = set()
        self.finished = False

    def encode(self, event: AssistantMessageEvent) -> bytes:
        """The line(s) of ``event``.

        Raises:
            ProxyError: the event contradicts its own ``partial`` (a provider bug).
        """
        return b"".join(_line(payload) for payload in self.payloads(event))

    def failure(self, error_message: str) -> bytes:
        """The terminal ``error`` line for a stream function that failed instead of ending
        (no usage is known then: it is zero)."""
        self.finished = True
        return _line(self._error_payload("error", error_message, Usage()))

    def _error_payload(
        self, reason: str, error_message: str | None, usage: Usage
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"type": "error", "reason": reason}
        if error_message is not None:
            # The server's provider wrote it: it must not hand the client a key or a header.
            redacted = error_message if self._redacted else redact_credentials(error_message)
            payload["errorMessage"] = redacted
        payload["usage"] = _usage(usage)
        return payload

    def payloads(self, event: AssistantMessageEvent) -> list[dict[str, Any]]:
        """The JSON objects of ``event``'s line(s)."""
        if isinstance(event, StreamDone):
            self.finished = True
            message = event.message
            done = {"type": "done", "reason": event.reason, "usage": _usage(message.usage)}
            return [_with_thinking_level(done, message)]
        if isinstance(event, StreamError):
            self.finished = True
            error = event.error
            payload = self._error_payload(event.reason, error.error_message, error.usage)
            return [_with_thinking_level(payload, error)]
        if isinstance(event, StreamStart):
            return [{"type": "start"}]
        index = event.content_index
        if isinstance(event, (TextDelta, ThinkingDelta, ToolCallDelta)):
            if isinstance(event, ToolCallDelta):
                self._streamed.add(index)
            return [{"type": event.type, "contentIndex": index, "delta": event.delta}]
        if isinstance(event, ToolCallStart):
            call = _tool_call_at(event.partial, index, event.type)
            return [
                {"type": event.type, "contentIndex": index, "id": call.id, "toolName": call.name}
            ]
        if isinstance(event, ToolCallEnd):
            return self._tool_call_end(event)
        if isinstance(event, (TextEnd, ThinkingEnd)):
            return [_block_end(event)]
        return [{"type": event.type, "contentIndex": index}]  # text_start, thinking_start

    def _tool_call_end(self, event: ToolCallEnd) -> list[dict[str, Any]]:
        # The complete call, which a current client takes over what it rebuilt from deltas.
        end = {
            "type": "toolcall_end",
            "contentIndex": event.content_index,
            "toolCall": to_dict(event.tool_call),
        }
        arguments = event.tool_call.arguments
        if event.content_index in self._streamed or not arguments:
            return [end]
        # A provider that got the arguments whole sent no deltas, but a 0.73-era client
        # rebuilds the arguments from deltas only: send them as one.
        delta = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        return [
            {"type": "toolcall_delta", "contentIndex": event.content_index, "delta": delta},
            end,
        ]


def _with_thinking_level(payload: dict[str, Any], message: AssistantMessage) -> dict[str, Any]:
    """``payload`` with the provider's exact reasoning effort, when the reply has one."""
    if message.provider_thinking_level is not None:
        payload["providerThinkingLevel"] = message.provider_thinking_level
    return payload


def _line(payload: dict[str, Any]) -> bytes:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    # A lone surrogate (a broken paste) must not fail the stream: it becomes "?".
    return _DATA + text.encode("utf-8", "replace") + _EVENT_END


def _usage(usage: Usage) -> Any:
    # Through dumps, which writes a non-finite cost as null as JSON.stringify does.
    return json.loads(dumps(usage))


def _block_end(event: TextEnd | ThinkingEnd) -> dict[str, Any]:
    payload: dict[str, Any] = {"type": event.type, "contentIndex": event.content_index}
    content = event.partial.content
    block = content[event.content_index] if event.content_index < len(content) else None
    if isinstance(block, TextContent):
        signature = block.text_signature
    elif isinstance(block, ThinkingContent):
        signature = block.thinking_signature
    else:
        signature = None
    if signature is not None:
        payload["contentSignature"] = signature
    return payload


def _tool_call_at(partial: AssistantMessage, index: int, kind: str) -> ToolCall:
    content = partial.content
    block = content[index] if 0 <= index < len(content) else None
    if not isinstance(block, ToolCall):
        raise ProxyError(f"{kind} at contentIndex {index}, which is not a tool call")
    return block
