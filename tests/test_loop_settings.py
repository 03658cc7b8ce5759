"""The loop's settings have one declaration, ``AgentLoopConfig``: the Agent and ``AgentSpec`` follow.

``scripts/loop_settings.py`` writes the Agent's options and the spec's fields from the config's
fields; these tests fail when a file is not what it writes, or when a setting is added to one of
the three by hand.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import attrs
import pytest

from pi_core import Agent, AgentLoopConfig, Model
from pi_core._hooks import SETTING_OF
from pi_core.durable import AgentSpec
from pi_core.providers.faux import FauxProvider

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "scripts" / "loop_settings.py"

AGENT_OWN = {
    "system_prompt", "model", "thinking_level", "tools", "messages", "steering_mode",
    "follow_up_mode", "session_id", "thinking_budgets", "options", "clock", "compaction",
    "output_type", "output_retries",
}  # fmt: skip
"""The Agent's options that are not loop settings: its state, queues and per-run options, its
compaction policy (compaction happens between the Agent's runs and turns, not in the loop), and
its output type and retries (the loop takes both as one ``OutputSpec``)."""

SPEC_OWN = {
    "model",
    "stream_fn",
    "tools",
    "system_prompt",
    "steering_mode",
    "follow_up_mode",
    "approval_timeout",
    "output_type",
    "output_retries",
    "compaction",
}
"""``AgentSpec``'s fields that it declares itself (the output type and retries become the loop's
``OutputSpec``)."""


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_loop_settings", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def marked(where: str) -> set[str]:
    """The config's fields that ``where`` (``"agent"``, ``"spec"``) also takes."""
    return {
        field.name
        for field in attrs.fields(AgentLoopConfig)
        if where in field.metadata.get(SETTING_OF, ())
    }


def test_the_generated_blocks_are_current() -> None:
    generator = load_generator()
    assert generator.stale_files(generator.CONFIG.read_text(encoding="utf-8")) == []


def test_a_setting_added_to_the_config_alone_makes_the_agent_and_the_spec_stale() -> None:
    generator = load_generator()
    source = generator.CONFIG.read_text(encoding="utf-8")
    anchor = "    tracer: RunTracer | None = attrs.field(default=None, metadata=_EVERYWHERE)\n"
    assert anchor in source
    added = source.replace(
        anchor,
        anchor + "    finish_turn: object = attrs.field(default=None, metadata=_EVERYWHERE)\n",
    )
    assert set(generator.stale_files(added)) == {generator.AGENT, generator.SPEC}
    agent = generator.generated(added, generator.AGENT, generator.AGENT.read_text("utf-8"))
    assert "        finish_turn: object = None,\n" in agent
    assert '"finish_turn": finish_turn,' in agent
    assert "    finish_turn: _LoopSetting[object] = _LoopSetting()\n" in agent
    spec = generator.generated(added, generator.SPEC, generator.SPEC.read_text("utf-8"))
    assert "    finish_turn: object = attrs.field(default=None, kw_only=True)\n" in spec


def test_a_setting_written_into_a_generated_block_by_hand_is_reported() -> None:
    generator = load_generator()
    text = generator.SPEC.read_text(encoding="utf-8")
    marker = "    # --- end of the generated fields ---\n"
    edited = text.replace(marker, "    limits: object = None\n" + marker)
    source = generator.CONFIG.read_text(encoding="utf-8")
    assert generator.generated(source, generator.SPEC, edited) == text != edited


def test_the_agent_takes_exactly_the_settings_marked_for_it() -> None:
    parameters = inspect.signature(Agent).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    assert set(parameters) - AGENT_OWN == marked("agent")
    config_fields = attrs.fields_dict(AgentLoopConfig)
    for name in marked("agent"):
        assert parameters[name].default == config_fields[name].default, name


def test_the_spec_takes_exactly_the_settings_marked_for_it() -> None:
    fields = attrs.fields_dict(AgentSpec)
    assert set(fields) - SPEC_OWN == marked("spec")
    for name in marked("spec"):
        assert fields[name].kw_only, name


def test_every_agent_setting_is_a_checked_read_write_attribute() -> None:
    agent = Agent()
    for name in marked("agent"):
        value = getattr(agent, name)
        setattr(agent, name, value)
        assert getattr(agent, name) is value
    with pytest.raises(ValueError, match="max_parallel_tools"):
        agent.max_parallel_tools = 0


def test_the_spec_checks_its_settings_as_the_config_does() -> None:
    provider = FauxProvider()
    with pytest.raises(ValueError, match="tool_execution"):
        AgentSpec(Model("m"), provider.stream, tool_execution="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_parallel_tools"):
        AgentSpec(Model("m"), provider.stream, max_parallel_tools=0)
