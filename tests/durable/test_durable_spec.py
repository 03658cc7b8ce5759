"""AgentSpec and DurableAgents: what an agent is, by name."""

from __future__ import annotations

from typing import Any

import pytest

from pi_core.durable import AgentSpec, DurableAgents, DurableError, UnknownAgentError
from pi_core.providers.faux import FauxProvider


def spec(**options: Any) -> AgentSpec:
    provider = FauxProvider()
    model = provider.get_model()
    assert model is not None
    return AgentSpec(model, provider.stream, (), "You help.", **options)


def test_an_agent_spec_takes_model_stream_tools_and_prompt_by_position_and_options_by_name() -> (
    None
):
    made = spec(tool_execution="sequential", max_parallel_tools=2, steering_mode="all")
    assert (made.system_prompt, made.tools, made.tool_execution) == ("You help.", (), "sequential")
    assert (made.max_parallel_tools, made.steering_mode, made.follow_up_mode) == (
        2,
        "all",
        "one-at-a-time",
    )


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("tool_execution", "eager"),
        ("max_parallel_tools", 0),
        ("follow_up_mode", "some"),
        ("approval_timeout", 0),
        ("approval_timeout", -5.0),
    ],
)
def test_an_agent_spec_refuses_bad_options(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=repr(value)):
        spec(**{option: value})


def test_agents_are_defined_once_by_name_and_built_from_params() -> None:
    agents = DurableAgents()

    @agents.define("helper")
    def helper(params: dict[str, Any]) -> AgentSpec:
        return spec(max_parallel_tools=params["limit"])

    with pytest.raises(ValueError, match="'helper' is already defined"):
        agents.define("helper")
    assert agents.names == ["helper"]
    assert agents.build("helper", {"limit": 3}).max_parallel_tools == 3
    with pytest.raises(UnknownAgentError, match=r"'other'.*'helper'"):
        agents.build("other", {})
    with pytest.raises(DurableError, match="'helper' raised: KeyError"):
        agents.build("helper", {})


def test_a_factory_must_return_an_agent_spec() -> None:
    agents = DurableAgents()
    agents.define("wrong")(lambda params: "not a spec")  # type: ignore[arg-type,return-value]
    with pytest.raises(DurableError, match="returned str, not an AgentSpec"):
        agents.build("wrong", {})


def test_a_call_waits_for_a_decision_without_a_bound_unless_the_spec_gives_one() -> None:
    assert spec().approval_timeout is None
    assert spec(approval_timeout=3600).approval_timeout == 3600
