"""``pi-core run --output-schema FILE.json`` in subprocesses: the demo model answers the schema
by calling the output tool, and the validated JSON is the last line printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_process import run_cli

from backends import BACKENDS

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Lisbon", "Porto"]},
        "population": {"type": "integer"},
        "coastal": {"type": "boolean"},
    },
    "required": ["city", "population", "coastal"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_prints_the_validated_json_last(backend: str, tmp_path: Path) -> None:
    schema = tmp_path / "city.json"
    schema.write_text(json.dumps(SCHEMA))
    done = run_cli("run", "--backend", backend, "--output-schema", str(schema), "Which city?")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert json.loads(lines[-1]) == {"city": "Lisbon", "population": 1, "coastal": False}
    assert "✓ final_result: Final result processed." in done.stdout


def test_with_json_events_the_answer_follows_the_events(tmp_path: Path) -> None:
    schema = tmp_path / "count.json"
    schema.write_text(json.dumps({"type": "integer", "default": 7}))
    done = run_cli("run", "--json", "--output-schema", str(schema), "How many?")
    assert done.returncode == 0, done.stderr
    *events, answer = done.stdout.splitlines()
    assert json.loads(answer) == 7
    assert json.loads(events[-1])["type"] == "agent_end"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("{not json", "--output-schema"),
        ("[1, 2]", "a JSON Schema is an object"),
        ('{"type": "no-such-type"}', "not a valid JSON Schema"),
    ],
)
def test_a_file_that_is_no_json_schema_is_a_usage_error(
    content: str, error: str, tmp_path: Path
) -> None:
    schema = tmp_path / "bad.json"
    schema.write_text(content)
    done = run_cli("run", "--output-schema", str(schema), "Which city?")
    assert done.returncode == 2
    assert error in done.stderr


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("run", "--output-schema", str(tmp_path / "missing.json"), "Which city?")
    assert done.returncode == 2
    assert "missing.json" in done.stderr
