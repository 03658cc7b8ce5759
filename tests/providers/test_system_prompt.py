"""The system prompt comes from the transcript: the leading system message rendered with its
sections, later system messages folded into it, unless the model takes them mid-way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_core import (
    AssistantMessage,
    Context,
    Model,
    ModelCompat,
    StreamOptions,
    SystemMessage,
    TextContent,
    Tool,
    ToolCall,
    ToolReference,
    ToolResultMessage,
    UserMessage,
)
from pi_core.providers import anthropic, google, openai, openai_responses

KEY = StreamOptions(api_key="k")
ECHO = Tool("echo", "Echo.", {"type": "object"})
SHOUT = Tool("shout", "Shout.", {"type": "object"})


def transcript(api: str) -> list[Any]:
    """A leading prompt with a section, a call answered after a mid-way update arrived, and a
    later update that replaces the section and swaps a tool."""
    call = AssistantMessage(
        [ToolCall("c1", "echo", {})], api, "p", "m", stop_reason="toolUse", timestamp=2
    )
    return [
        SystemMessage("Be brief.", {"style": "Plain words."}, tools_added=[ECHO], timestamp=0),
        UserMessage("hi", timestamp=1),
        call,
        SystemMessage("Mind the user.", timestamp=3),
        ToolResultMessage("c1", "echo", [TextContent("ok")], timestamp=4),
        SystemMessage(
            "",
            {"style": "Rhymes."},
            tools_added=[SHOUT],
            tools_removed=[ToolReference("echo")],
            timestamp=5,
        ),
        UserMessage("more", timestamp=6),
    ]


FOLDED = "Be brief.\n\nMind the user.\n\nRhymes."
"""The state at the end: contents joined, the section replaced (sections render last)."""


def body_of(module: Any, model: Model) -> dict[str, Any]:
    context = Context(messages=transcript(model.api))
    spec = module._build_request(model, context, KEY, "k")
    data: dict[str, Any] = json.loads(spec.encode())
    return data


@pytest.mark.parametrize(
    ("module", "api", "prompt_of"),
    [
        (openai, "openai-completions", lambda body: body["messages"][0]["content"]),
        (openai_responses, "openai-responses", lambda body: body["input"][0]["content"]),
        (anthropic, "anthropic-messages", lambda body: body["system"][0]["text"]),
        (
            google,
            "google-generative-ai",
            lambda body: body["systemInstruction"]["parts"][0]["text"],
        ),
    ],
)
def test_system_messages_fold_into_the_prompt(module: Any, api: str, prompt_of: Any) -> None:
    model = Model("m", api=api, provider="p", base_url="http://127.0.0.1:9/v1")
    body = body_of(module, model)
    assert prompt_of(body) == FOLDED
    names = json.dumps(body["tools"])
    assert '"shout"' in names and '"echo"' not in names  # the tools declared at the end
    assert json.dumps(body).count("Mind the user.") == 1  # folded in, not also in place


def test_a_model_that_takes_system_messages_mid_way_gets_them_in_place() -> None:
    compat = ModelCompat(supports_mid_convo_system_messages=True)
    model = Model(
        "m", api="openai-completions", provider="p", base_url="http://127.0.0.1:9/v1", compat=compat
    )
    body = body_of(openai, model)
    roles = [(message["role"], message.get("content")) for message in body["messages"]]
    assert roles == [
        ("system", "Be brief.\n\nPlain words."),
        ("user", "hi"),
        ("assistant", ""),
        ("tool", "ok"),
        ("system", "Mind the user."),  # held until the call had its result
        ("system", 'Updated system prompt section "style":\n\nRhymes.'),
        ("user", "more"),
    ]
