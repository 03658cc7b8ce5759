"""Typed output of durable runs, on SQLite: a worker process runs the agents of
``_output_agents``; ``DurableRuns.output`` returns the validated answer as JSON from any
process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from durable._output_agents import Invoice
from durable._workers import client, running_worker, stop
from pi_core import TextContent, ToolResultMessage
from pi_core.durable import AgentSpec, DurableRuns, RunFailedError
from pi_core.testing import ScriptedStream

TARGET = "durable._output_agents:agents"


def test_a_durable_run_answers_with_its_output_as_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"

    async def typed_run(runs: DurableRuns) -> tuple[Any, list[Any]]:
        run_id = await runs.start("invoice", "Read INV-1.")
        return await runs.output(run_id), await runs.result(run_id)

    async def failing_run(runs: DurableRuns) -> None:
        run_id = await runs.start("stubborn", "Read INV-1.")
        await runs.output(run_id)

    with running_worker(url, "typed", target=TARGET) as worker:
        output, messages = client(url, typed_run)
        with pytest.raises(RunFailedError, match="Output failed after 1 retries"):
            client(url, failing_run)
        stop(worker)
    assert output == {"number": "INV-1", "total": 42.5}  # validated and coerced
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.is_error) for r in results] == [
        ("lookup", False),
        ("final_result", True),
        ("final_result", False),
    ]
    [text] = results[0].content
    assert isinstance(text, TextContent) and text.text == "INV-1: 42.50 EUR"


def test_an_agent_spec_checks_its_output_type_and_retries() -> None:
    model = ScriptedStream().model
    spec = AgentSpec(model, ScriptedStream(), output_type=Invoice, output_retries=0)
    assert (spec.output_type, spec.output_retries) == (Invoice, 0)
    with pytest.raises(TypeError):
        AgentSpec(model, ScriptedStream(), output_type=object)
    with pytest.raises(ValueError, match="output_retries"):
        AgentSpec(model, ScriptedStream(), output_type=Invoice, output_retries=-1)
