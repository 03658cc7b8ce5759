"""``StreamOptions.tool_choice`` in each API's own words, and where ``sampling_params`` go.

``"auto"`` and ``"none"`` exist everywhere. ``"required"`` (some tool) and ``{"name": ...}``
(this tool) are spelled ``required`` / a named function by the OpenAI APIs, ``any`` / a named
``tool`` by Anthropic, and ``ANY`` (with one allowed function name for a named tool) by Gemini.
A request without tools sends no choice: every API refuses one there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._options import StreamOptions, ToolChoice

__all__ = [
    "add_sampling_params",
    "anthropic_tool_choice",
    "completions_tool_choice",
    "gemini_tool_config",
    "responses_tool_choice",
]


def _named(choice: ToolChoice) -> str | None:
    return choice["name"] if isinstance(choice, Mapping) else None


def completions_tool_choice(choice: ToolChoice) -> Any:
    """Chat Completions' ``tool_choice``."""
    name = _named(choice)
    return choice if name is None else {"type": "function", "function": {"name": name}}


def responses_tool_choice(choice: ToolChoice) -> Any:
    """The Responses API's ``tool_choice``."""
    name = _named(choice)
    return choice if name is None else {"type": "function", "name": name}


def anthropic_tool_choice(choice: ToolChoice) -> dict[str, Any]:
    """Anthropic's ``tool_choice``."""
    name = _named(choice)
    if name is not None:
        return {"type": "tool", "name": name}
    return {"type": "any" if choice == "required" else choice}


def gemini_tool_config(choice: ToolChoice) -> dict[str, Any]:
    """Gemini's ``toolConfig``."""
    name = _named(choice)
    if name is not None:
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}[str(choice)]
    return {"functionCallingConfig": {"mode": mode}}


def add_sampling_params(body: dict[str, Any], options: StreamOptions) -> None:
    """Merge ``sampling_params`` into an OpenAI-compatible body, over the named fields."""
    if options.sampling_params:
        body.update(options.sampling_params)
