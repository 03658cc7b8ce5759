"""Transcripts interchange with the TypeScript Pi of both eras, under Node.

``proxy/interop/transcript.mjs`` runs the Agent of pi-agent-core 1.6.0 or 0.73.1 with pi-ai's
faux provider. What it writes loads here and writes back with nothing lost, every field of
either era included; what we write, its Agent reads: 1.6.0 finds our prompt and tools in the
transcript's system messages, and both keep every message as we wrote it.

The tests skip (saying why) without node >= 20 and npm (see tests/node_interop.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from node_interop import INTEROP, NODE_DEADLINE, VERSIONS
from pi_core import (
    Agent,
    AgentMessage,
    AgentTool,
    Model,
    SystemMessage,
    Tool,
    current_system_prompt,
    current_tools,
    serialization,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

pytestmark = pytest.mark.anyio


async def run_transcript(node: str, *args: str) -> Any:
    """Run ``transcript.mjs`` and return the JSON it prints."""
    with anyio.fail_after(NODE_DEADLINE):
        done = await anyio.run_process([node, "transcript.mjs", *args], cwd=INTEROP, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("pi", VERSIONS)
async def test_a_ts_transcript_loads_and_writes_back_unchanged(node: str, pi: str) -> None:
    written = await run_transcript(node, pi, "write")
    loaded = serialization.from_dict(written, list[AgentMessage])
    assert [serialization.to_dict(message) for message in loaded] == written
    # Through the JSON text too, as a file would hold it.
    text = serialization.dumps(loaded)
    assert json.loads(text) == written
    assert serialization.loads(text, list[AgentMessage]) == loaded

    roles = [message.role for message in loaded]
    assert roles.count("toolResult") == 3
    if pi == "1.6.0":
        # The prompt and both tool lists, and the change between the runs, replay here.
        assert roles[0] == roles[6] == "system"
        assert current_system_prompt(loaded) == "Be brief."
        assert [tool.name for tool in current_tools(loaded)] == ["echo", "shout"]
        assert [tool.name for tool in current_tools(loaded[:6])] == ["echo", "fail"]
    else:
        assert "system" not in roles


async def _echo(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> str:
    return f"echo:{params['v']}"


ECHO = AgentTool(
    "echo",
    "The echo tool.",
    {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
    _echo,
)


async def our_transcript() -> list[AgentMessage]:
    """A transcript of our Agent: its system message, a tool call and its result, a reply."""
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("echo", {"v": "ü"}, id="c1")], stop_reason="toolUse"
            ),
            faux_assistant_message("Echoed."),
        ]
    )
    declared = SystemMessage(
        "Be brief.", tools_added=[Tool(ECHO.name, ECHO.description, ECHO.parameters)], timestamp=0
    )
    agent = Agent(
        model=Model("faux-1", api="faux", provider="faux"),
        messages=[declared],
        tools=[ECHO],
        stream_fn=faux.stream,
    )
    with anyio.fail_after(10):
        await agent.prompt("Echo ü.")
    return list(agent.state.messages)


@pytest.mark.parametrize("pi", VERSIONS)
async def test_our_transcript_is_read_by_the_ts_agent(node: str, pi: str, tmp_path: Path) -> None:
    ours = await our_transcript()
    assert isinstance(ours[0], SystemMessage)
    written = [serialization.to_dict(message) for message in ours]
    path = tmp_path / "transcript.json"
    path.write_text(serialization.dumps(ours))

    read = await run_transcript(node, pi, "read", str(path))
    # Every message comes back as we wrote it, with the new prompt and reply after them.
    assert read["messages"][: len(written)] == written
    assert [message["role"] for message in read["messages"][len(written) :]] == [
        "user",
        "assistant",
    ]
    seen = read["seen"]
    if pi == "1.6.0":
        # 1.6.0 takes the prompt and the tools from our system message.
        assert read["systemPrompt"] == "Be brief."
        assert seen["systemPrompt"] == "Be brief."
        assert seen["tools"] == ["echo"]
        assert seen["roles"] == [*(m.role for m in ours), "user"]
    else:
        # 0.73.1 knows no system messages: its model gets the others.
        assert seen["roles"] == [*(m.role for m in ours if m.role != "system"), "user"]
