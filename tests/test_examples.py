"""Every script in examples/ runs, on the faux provider, and shows what it claims to show."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from backends import BACKENDS
from json_events import load_events
from pi_core import TextContent, ToolExecutionEnd
from pi_core.testing import check_event_grammar

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_asyncio_agent() -> None:
    out = run_example("asyncio_agent.py")
    assert "[tool] get_weather({'city': 'Lisbon'})" in out
    assert "[tool] get_weather -> Sunny and 21 °C in Lisbon" in out
    assert "It is sunny and 21 °C in Lisbon" in out
    assert out.rstrip().endswith("[done] 5 messages in the transcript")


def test_trio_agent() -> None:
    pytest.importorskip("trio")
    out = run_example("trio_agent.py").splitlines()
    assert out[0] == "agent_start"
    assert "tool_execution_end" in out
    assert out[-2:] == ["agent_end", "answer: 2 + 40 = 42."]


@pytest.mark.parametrize("backend", BACKENDS)
def test_parallel_tools(backend: str) -> None:
    lines = dict(
        line.split(":", 1) for line in run_example("parallel_tools.py", backend).splitlines()
    )
    assert lines["source order"].split() == ["slow,", "medium,", "fast,", "instant"]
    assert lines["result order"].split() == ["slow,", "medium,", "fast,", "instant"]
    completion = lines["completion order"].replace(",", "").split()
    assert completion[0] == "instant"
    assert sorted(completion) == sorted(["slow", "medium", "fast", "instant"])
    assert {"parallel", "sequential"} <= set(lines)


@pytest.mark.parametrize("backend", BACKENDS)
def test_steering(backend: str) -> None:
    out = run_example("steering.py", backend).splitlines()
    assert out == [
        "user      > the history of trio",
        "tool      > research({'topic': 'the history of trio'}) started",
        "tool      > research: 25%",
        "tool      > research: 50%",
        "tool      > research: 75%",
        "tool      > research: notes on the history of trio",
        "user      > Actually, focus on anyio.",
        "assistant > OK: Actually, focus on anyio.",
        "user      > Then summarise it in one line.",
        "assistant > OK: Then summarise it in one line.",
    ]


def _import_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.anyio
async def test_starlette_sse_streams_a_whole_run() -> None:
    app = _import_example("starlette_sse").create_app(tokens_per_second=None)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://example") as client:
        page = await client.get("/")
        response = await client.get("/events", params={"prompt": "one two three four"})
    assert "new EventSource" in page.text
    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = response.text.split("\n\n")
    assert chunks[-1] == ""
    assert all(chunk.startswith("data: ") for chunk in chunks[:-1])
    events = load_events(chunk.removeprefix("data: ") for chunk in chunks[:-1])
    check_event_grammar(events)
    ends = [e for e in events if isinstance(e, ToolExecutionEnd)]
    assert [e.result.content for e in ends] == [[TextContent("4")]]
    assert events[-1].type == "agent_end"


def test_durable_worker() -> None:
    out = run_example("durable_worker.py")
    types = [
        line.split("] ", 1)[1]
        for line in out.splitlines()
        if line.startswith("[") and line[1].isdigit()
    ]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert "tool_execution_end" in types
    assert "[result] 6 times 7 is 42.0." in out
    assert out.rstrip().endswith("[status] success")


@pytest.mark.parametrize("backend", BACKENDS)
def test_mcp_tools(backend: str) -> None:
    out = run_example("mcp_tools.py", backend)
    assert "[tools] time_get_current_time, time_convert_time" in out
    assert "[tool] time_get_current_time -> {'timezone': 'Asia/Tokyo'," in out
    assert "'target': {'timezone': 'Europe/Paris', 'datetime': '" in out
    assert "T10:30:00+01:00'" in out or "T11:30:00+02:00'" in out  # Paris in winter or summer
    assert out.rstrip().endswith("[answer] Tokyo is nine hours ahead of UTC.")


@pytest.mark.parametrize("backend", BACKENDS)
def test_planner(backend: str) -> None:
    lines = run_example("planner.py", backend).splitlines()
    for topic in ("tides", "seasons"):
        start = lines.index(f"  [{topic}] tool_execution_start search")
        end = lines.index(f"  [{topic}] tool_execution_end search")
        answer = next(i for i, line in enumerate(lines) if line.startswith(f"[{topic}] research"))
        assert start < end < answer
    assert "[tides] research answered: Report on tides: the moon's pull." in lines
    assert lines[-1] == "planner: Both reports are in: tides follow the moon, seasons the tilt."
