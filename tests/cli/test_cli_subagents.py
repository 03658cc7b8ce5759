"""The CLI's ``research`` sub-agent: the demo delegates, and the live view indents each child's
steps under the call that runs it, labelled with that call."""

from __future__ import annotations

import re

import pytest
from _cli_process import run_cli

from backends import BACKENDS
from json_events import load_events
from pi_core import SubagentEvent, ToolExecutionEnd, ToolExecutionUpdate
from pi_core.testing import check_event_grammar

PROMPT = "research 2 + 3 and 17 * 23"


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_researchers_work_in_parallel_indented_under_their_calls(backend: str) -> None:
    done = run_cli("run", "--backend", backend, PROMPT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert '  → research {"task": "2 + 3"}' in lines
    assert '  → research {"task": "17 * 23"}' in lines
    # Each child's calls, one level deeper, labelled with the parent's call.
    first = r"    research #1 ✓ calculate: 2 \+ 3 = 5 \(\d+ ms\)"
    second = r"    research #2 ✓ calculate: 17 \* 23 = 391 \(\d+ ms\)"
    assert any(re.fullmatch(first, line) for line in lines)
    assert any(re.fullmatch(second, line) for line in lines)
    # Both children started before either finished: they ran side by side.
    first_end = next(i for i, line in enumerate(lines) if line.startswith("  ✓ research"))
    started = [line for line in lines[:first_end] if line.startswith("    research #")]
    assert sum("→ sleep" in line for line in started) == 2
    assert "- research answered: Here is what the tools reported:" in done.stdout
    assert lines[-1].startswith("done · 2 turns · 2 tool calls")


def test_json_output_carries_the_childrens_events() -> None:
    done = run_cli("run", "--json", PROMPT)
    assert done.returncode == 0, done.stderr
    events = load_events(done.stdout.splitlines())
    check_event_grammar(events)
    forwarded = [
        e.partial_result.details
        for e in events
        if isinstance(e, ToolExecutionUpdate) and e.partial_result.details is not None
    ]
    # Read back from JSON, a forwarded event is its JSON object: the path and the child's event.
    assert {tuple(d["path"]) for d in forwarded if "path" in d} == {("research",)}
    kinds = [d["event"]["type"] for d in forwarded if "path" in d]
    assert kinds.count("agent_start") == kinds.count("agent_end") == 2
    ends = [e for e in events if isinstance(e, ToolExecutionEnd)]
    assert [e.tool_name for e in ends] == ["research", "research"]
    assert not any(isinstance(d, SubagentEvent) for d in forwarded)
