"""The public surface: a sorted ``__all__``, every name importable, public module paths."""

from __future__ import annotations

import importlib
import inspect
import types
from typing import Any

import attrs
import pytest

import pi_core
import pi_core.lowlevel

PUBLIC_MODULES = [
    "pi_core",
    "pi_core.lowlevel",
    "pi_core.models",
    "pi_core.nursery",
    "pi_core.proxy",
    "pi_core.serialization",
    "pi_core.sse",
    "pi_core.testing",
    "pi_core.ui",
]


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_is_sorted_and_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(module, name), name


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_module_of_each_export_is_a_public_path(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        obj = getattr(module, name)
        home = getattr(obj, "__module__", None)
        # Aliases such as ``AgentListener`` keep their origin's module (and on Python 3.10 a
        # generic alias passes for a class).
        if (
            not isinstance(home, str)
            or isinstance(obj, types.GenericAlias)
            or not isinstance(obj, type | type(len) | type(test_all_is_sorted_and_importable))
        ):
            continue
        assert not any(part.startswith("_") for part in home.split(".")), (name, home)
        assert getattr(importlib.import_module(home), name) is obj


def test_spec_names_are_exported() -> None:
    expected = {
        "Agent", "AgentBusyError", "AgentContext", "AgentLoopConfig", "AgentTool", "AgentToolResult",
        "AbortController", "AbortSignal", "AssistantMessage", "Context", "ImageContent", "Model",
        "ModelCost", "PiCoreError", "ProviderError", "ProxyError", "StreamOptions", "TextContent",
        "ThinkingContent", "Tool", "ToolArgumentsError", "ToolCall", "ToolResultMessage", "Usage",
        "UsageCost", "UserMessage", "agent_loop", "agent_loop_continue", "default_convert_to_llm",
        "register_provider", "run_agent_loop", "run_agent_loop_continue", "stream_simple", "tool",
        "unregister_provider", "validate_tool_arguments", "BeforeToolCallContext",
        "BeforeToolCallResult", "AfterToolCallContext", "AfterToolCallResult", "TurnContext",
        "NextTurn", "RunError", "RunOutcome", "RunResult",
    }  # fmt: skip
    assert expected <= set(pi_core.__all__)


def test_the_engine_seams_are_public() -> None:
    expected = {"ReplyReader", "RunTrace", "RunTracer", "ToolCallAborted", "now_ms"}
    assert expected <= set(pi_core.lowlevel.__all__)
    fields = {field.name for field in attrs.fields(pi_core.AgentLoopConfig)}
    assert {"clock", "interruptions", "before_tool_batch", "tracer"} <= fields


def test_exceptions_form_one_tree() -> None:
    assert issubclass(pi_core.AgentBusyError, RuntimeError)
    assert issubclass(pi_core.ToolArgumentsError, ValueError)
    for error in (
        pi_core.AgentBusyError,
        pi_core.ToolArgumentsError,
        pi_core.ProviderError,
        pi_core.ProxyError,
    ):
        assert issubclass(error, pi_core.PiCoreError)


@pytest.mark.parametrize(
    "function",
    [
        pi_core.agent_loop,
        pi_core.agent_loop_continue,
        pi_core.run_agent_loop,
        pi_core.run_agent_loop_continue,
    ],
)
def test_the_loops_signal_and_buffer_size_are_keyword_only(function: Any) -> None:
    parameters = inspect.signature(function).parameters
    for name in ("signal", "buffer_size"):
        if name in parameters:
            assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert "signal" in parameters
