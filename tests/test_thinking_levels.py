"""Which thinking levels a model takes, the level a request asks for in place of another, and
how each API's request says it.

The catalogue's maps are checked against pi-ai 1.6.0 under Node, model for model, and so are
the reasoning settings of the request bodies of Chat Completions (each thinking format),
Responses and Anthropic, over levels and maps (the tests skip, saying why, without node >= 20
and npm: see tests/node_interop.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, get_args

import attrs
import pytest

from node_interop import INTEROP, NODE_DEADLINE
from pi_core import Context, Model, ModelCompat, StreamOptions, UserMessage
from pi_core._compat import ThinkingFormat
from pi_core.models import (
    clamp_thinking_level,
    get_model,
    get_models,
    get_providers,
    supported_thinking_levels,
)
from pi_core.providers import anthropic, google, openai_responses
from pi_core.providers._openai_compat import resolve_compat
from pi_core.providers._openai_request import build_body

REASONING = Model("r1", api="openai-responses", provider="openai", reasoning=True)


@pytest.mark.parametrize(
    ("levels", "supported"),
    [
        (None, ["off", "minimal", "low", "medium", "high"]),  # xhigh and max only when named
        (
            {"xhigh": "xhigh", "max": "max"},
            ["off", "minimal", "low", "medium", "high", "xhigh", "max"],
        ),
        ({"off": None, "minimal": None}, ["low", "medium", "high"]),  # None rules a level out
    ],
)
def test_a_model_takes_the_levels_its_map_does_not_rule_out(
    levels: dict[str, str | None] | None, supported: list[str]
) -> None:
    assert (
        supported_thinking_levels(attrs.evolve(REASONING, thinking_level_map=levels)) == supported
    )


def test_a_missing_level_becomes_the_nearest_stronger_one_else_the_nearest_weaker() -> None:
    model = attrs.evolve(REASONING, thinking_level_map={"off": None, "minimal": None})
    assert clamp_thinking_level(model, "minimal") == "low"
    assert clamp_thinking_level(model, "off") == "low"
    assert clamp_thinking_level(model, "xhigh") == "high"
    assert clamp_thinking_level(model, "medium") == "medium"
    no_reasoning = attrs.evolve(REASONING, reasoning=False)
    assert supported_thinking_levels(no_reasoning) == ["off"]
    assert clamp_thinking_level(no_reasoning, "high") == "off"


def run_node(node: str, *args: str) -> Any:
    """Run a script of ``INTEROP`` and return the JSON it prints."""
    done = subprocess.run(
        [node, *args], cwd=INTEROP, capture_output=True, text=True, timeout=NODE_DEADLINE
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_catalogue_model_takes_the_levels_pi_ai_gives_it(node: str) -> None:
    theirs = run_node(node, "levels.mjs")
    ours = {
        f"{provider}/{model.id}": [
            supported_thinking_levels(model),
            *(clamp_thinking_level(model, level) for level in ("minimal", "xhigh", "max")),
        ]
        for provider in get_providers()
        for model in get_models(provider)
    }
    shared = ours.keys() & theirs.keys()
    assert len(shared) > 1000  # the same catalogue on both sides
    assert {key: ours[key] for key in shared} == {key: theirs[key] for key in shared}
    assert clamp_thinking_level(get_model("openai", "gpt-5.1"), "minimal") == "low"


FORMATS = get_args(ThinkingFormat)
LEVELS = (None, "minimal", "medium", "xhigh", "max")
MAPS: tuple[dict[str, str | None] | None, ...] = (
    None,
    {"off": None},  # always reasons
    {"off": "minimal", "minimal": None, "xhigh": "max"},  # its own words, a level it lacks
)
PROVIDERS = {
    "openai-completions": "groq",
    "openai-responses": "openai",
    "anthropic-messages": "anthropic",
    "google-generative-ai": "google",
}
"""The provider of each API's model, as ``reasoning.mjs`` has it."""
GEMINI_IDS = (
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
    "gemini-2.5-pro",
    "gemini-exp",
    "gemini-3-flash-preview",
    "gemini-3.1-pro-preview",
    "gemini-flash-latest",
    "gemma-4-27b-it",
)
"""Gemini's thinking settings depend on the model: a budget per family, or a level."""
GEMINI_MAPS: tuple[dict[str, str | None] | None, ...] = (
    *MAPS[:2],
    {"off": None, "minimal": None, "low": "low", "medium": "medium", "high": "high"},
    {"minimal": "LOW", "high": "high"},  # Google's words, in either case
    {"medium": "max"},  # a word Gemini does not take: the request is refused
)
DELIBERATE_GEMINI = "gemini-2.5-pro"
"""pi-ai 1.6.0 turns 2.5 Pro's thinking off with a budget of 0, which Gemini refuses for it (it
always thinks): pi_core leaves the model its own setting."""
REASONING_KEYS = (
    "reasoning_effort",
    "reasoning",
    "include",
    "thinking",
    "enable_thinking",
    "chat_template_kwargs",
    "output_config",
    "max_tokens",
)


def reasoning_cases() -> list[dict[str, Any]]:
    """Every API's reasoning settings, over levels and maps (Chat Completions: its formats,
    with and without ``reasoning_effort``; Anthropic: budgets and adaptive thinking)."""
    completions = [
        {"thinkingFormat": fmt, "supportsReasoningEffort": effort}
        for fmt in FORMATS
        for effort in (True, False)
    ]
    compats: dict[str, list[dict[str, Any] | None]] = {
        "openai-completions": list(completions),
        "openai-responses": [None],
        "anthropic-messages": [None, {"forceAdaptiveThinking": True}],
    }
    gemini = [
        {"api": "google-generative-ai", "id": model_id, "thinkingLevelMap": levels, "level": level}
        for model_id in GEMINI_IDS
        for levels in GEMINI_MAPS
        for level in LEVELS
    ]
    return [
        {"api": api, "compat": compat, "thinkingLevelMap": levels, "level": level}
        for api, each in compats.items()
        for compat in each
        for levels in MAPS
        for level in LEVELS
    ] + gemini


def our_body(case: dict[str, Any]) -> dict[str, Any]:
    """What our provider for the case's API sends, as far as reasoning goes."""
    compat = case.get("compat") or {}
    model = Model(
        case.get("id", "m1"),
        api=case["api"],
        provider=PROVIDERS[case["api"]],
        base_url="http://127.0.0.1:9/v1",
        reasoning=True,
        context_window=200_000,
        max_tokens=64_000,
        compat=ModelCompat(
            thinking_format=compat.get("thinkingFormat"),
            supports_reasoning_effort=compat.get("supportsReasoningEffort"),
            force_adaptive_thinking=compat.get("forceAdaptiveThinking"),
        ),
        thinking_level_map=case["thinkingLevelMap"],
    )
    context = Context("s", [UserMessage("hi")])
    options = StreamOptions(api_key="k", reasoning=case["level"])
    if case["api"] == "openai-completions":
        return build_body(model, context, options, resolve_compat(model))
    if case["api"] == "openai-responses":
        return openai_responses._body(model, context, options)
    if case["api"] == "google-generative-ai":
        try:
            config = google._body(model, context, options).get("generationConfig", {})
        except ValueError as refused:
            return {"error": str(refused)}
        return {"thinkingConfig": config.get("thinkingConfig")}
    return anthropic._body(model, context, options)


def their_settings(case: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The reasoning settings of pi-ai's body (Gemini's as its SDK's ``config``)."""
    if case["api"] != "google-generative-ai":
        return {key: body.get(key) for key in REASONING_KEYS}
    if "error" in body:
        return {"error": "refused"}
    return {"thinkingConfig": (body.get("config") or {}).get("thinkingConfig")}


def our_settings(case: dict[str, Any]) -> dict[str, Any]:
    body = our_body(case)
    if case["api"] != "google-generative-ai":
        return {key: body.get(key) for key in REASONING_KEYS}
    return {"error": "refused"} if "error" in body else body


def test_requests_ask_for_reasoning_as_pi_ai_does(node: str, tmp_path: Path) -> None:
    cases = reasoning_cases()
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    theirs = run_node(node, "reasoning.mjs", str(tmp_path / "cases.json"))
    assert len(theirs) == len(cases)
    differ = []
    for case, their_body in zip(cases, theirs, strict=True):
        if case.get("id") == DELIBERATE_GEMINI and case["level"] is None:
            continue
        ours, their = our_settings(case), their_settings(case, their_body)
        if ours != their:
            differ.append((case, ours, their))
    assert not differ, f"{len(differ)} of {len(cases)} differ, the first: {differ[0]}"
