"""Reading and checking the body of a proxy request: its size, its time, its JSON and its values.

A proxy serves clients it does not trust with its own keys, so it refuses up front what would
cost it memory or time (a body too large, too many JSON values, a client that stalls) and what
a provider would choke on (``NaN``, numbers out of range, absurd token counts), each with a 4xx
status and a message saying why.
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

import anyio
import anyio.to_thread
import attrs

from .. import normalize_context
from .._request_body import Refused
from .._texts import clip
from ..serialization import from_dict
from ._wire import ProxyRequest

__all__ = [
    "MAX_TOKENS_LIMIT",
    "parse_request",
]


MAX_TOKENS_LIMIT = 10_000_000
"""The largest token count a request may ask for (``maxTokens``, budgets, the model's limits)."""

_MAX_ERROR_TEXT = 2000
_PARSE_IN_THREAD_BYTES = 256 * 1024
"""Bodies from this size on are parsed in a worker thread, not on the event loop."""


async def parse_request(body: bytes) -> ProxyRequest:
    """The request a body holds, checked; a large body is parsed off the event loop.

    The context may come in the form of either era of upstream's client (see :mod:`._wire`);
    the request holds it normalized, its ``system_prompt`` / ``tools`` folded into a leading
    system message, so that a stream function sees the same transcript for either.

    Raises:
        Refused: 400 for malformed JSON (``NaN``, infinities and numbers out of range included),
            422 for a body of the wrong shape (a context in neither form included) or with
            values out of range.
    """
    if len(body) >= _PARSE_IN_THREAD_BYTES:
        return await anyio.to_thread.run_sync(_parse_request, body)
    return _parse_request(body)


def _parse_request(body: bytes) -> ProxyRequest:
    try:
        # Python's parser, not a faster one: it takes a lone surrogate escape ("\ud800", what
        # JavaScript writes for a broken paste) as JSON.parse does, and lets us refuse NaN.
        data = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        text = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise Refused(400, f"Malformed JSON in request body: {_clip(text)}") from None
    _check_context_form(data)
    try:
        request: ProxyRequest = from_dict(data, ProxyRequest)
    except ValueError as exc:
        # "Cannot load ProxyRequest: <problem> @ $.path; ..." → the problems alone
        _, colon, problems = str(exc).partition(": ")
        raise _invalid(problems if colon else str(exc)) from None
    _check_token_counts(request)
    return attrs.evolve(request, context=normalize_context(request.context))


_FORMS = "neither 1.6.0's {messages} nor 0.73.1's {systemPrompt, messages, tools}"


def _check_context_form(data: Any) -> None:
    """Refuse a context that is in neither era's form, saying so: the one thing both forms
    share is a list of messages."""
    if not isinstance(data, dict) or "context" not in data:
        return  # loading the body says what is wrong with it, and what else
    context = data["context"]
    if not isinstance(context, dict):
        found = "null" if context is None else type(context).__name__
        raise _invalid(f"context is {_FORMS}: expected an object, got {found} @ $.context")
    if "messages" not in context:
        raise _invalid(f"context is {_FORMS}: it has no messages @ $.context.messages")


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {_clip(text)}")
    return value


def _check_token_counts(request: ProxyRequest) -> None:
    options, model = request.options, request.model
    counts = [
        ("options.maxTokens", options.max_tokens, 1),
        ("model.maxTokens", model.max_tokens, 0),
        ("model.contextWindow", model.context_window, 0),
    ]
    for level, budget in (options.thinking_budgets or {}).items():
        counts.append((f"options.thinkingBudgets.{level}", budget, 0))
    problems = [
        f"expected an integer from {low} to {MAX_TOKENS_LIMIT}, got {value} @ $.{path}"
        for path, value, low in counts
        if value is not None and not low <= value <= MAX_TOKENS_LIMIT
    ]
    if problems:
        raise _invalid("; ".join(problems))


def _invalid(problems: str) -> Refused:
    return Refused(422, f"Invalid request body: {_clip(problems)}")


def _clip(text: str) -> str:
    return clip(text, _MAX_ERROR_TEXT)
