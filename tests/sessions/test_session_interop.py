"""``/save`` and ``/load`` against the TypeScript Pi coding agent 0.73.1 itself: its session
manager opens what pi_core saved and rebuilds the same messages, pi_core loads the same
transcript from a file the agent wrote, and from a compacted, branched file with the agent's own
kinds of message the messages the agent would send a model (needs node >= 20 and npm; ``npm ci`` runs in
tests/sessions/pi_interop, and the tests skip, saying why, without them)."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from node_interop import NODE_DEADLINE, find_node
from pi_core import (
    Agent,
    AgentMessage,
    AssistantMessage,
    Compaction,
    CompactionPolicy,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.serialization import to_dict
from pi_core.sessions import SessionFile, record

SESSION_INTEROP = Path(__file__).parent / "pi_interop"


def save_session(path: Path, messages: list[AgentMessage]) -> None:
    with SessionFile.create(path) as session:
        for message in messages:
            session.append(message)


def load_session(path: Path) -> list[AgentMessage]:
    with SessionFile.open(path, read_only=True) as session:
        return session.messages()


PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n not really a picture").decode()


@pytest.fixture(scope="module")
def pi_node() -> str:
    """Node with the Pi coding agents 0.73.1 and 1.6.0 installed in tests/sessions/pi_interop."""
    return find_node(SESSION_INTEROP)


def transcript() -> list[AgentMessage]:
    """A conversation with every kind of block a session holds."""
    call = ToolCall("call-1", "read", {"path": "notes.txt", "lines": [1, 2]})
    return [
        UserMessage(
            [
                TextContent("What is in notes.txt? Here is a photo: ünï"),
                ImageContent(PIXEL, "image/png"),
            ],
            timestamp=1_700_000_000_000,
        ),
        AssistantMessage(
            [ThinkingContent("Read the file first.", "sig-1"), TextContent("Let me look."), call],
            "faux",
            "faux",
            "faux-1",
            Usage(12, 7, 0, 0, 19),
            "toolUse",
            timestamp=1_700_000_001_000,
        ),
        ToolResultMessage(
            "call-1",
            "read",
            [TextContent("milk, eggs"), ImageContent(PIXEL, "image/png")],
            details={"lines": 2},
            timestamp=1_700_000_002_000,
        ),
        AssistantMessage(
            [TextContent("It lists milk and eggs.")],
            "faux",
            "faux",
            "faux-1",
            Usage(30, 6, 0, 0, 36),
            timestamp=1_700_000_003_000,
        ),
        UserMessage("Thanks!", timestamp=1_700_000_004_000),
    ]


@tool
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


VERSIONS = ["073", "160"]
"""The coding agents: 0.73.1 and 1.6.0 (session073.mjs and session160.mjs drive them)."""


def run_session_script(
    node: str, mode: str, path: Path, stdin: str = "", version: str = "073"
) -> str:
    done = subprocess.run(
        [node, str(SESSION_INTEROP / f"session{version}.mjs"), mode, str(path)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=NODE_DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_the_pi_coding_agent_opens_a_saved_session_with_the_same_messages(
    pi_node: str, tmp_path: Path, version: str
) -> None:
    path = tmp_path / "saved.jsonl"
    messages = transcript()
    save_session(path, messages)
    written = path.read_bytes()
    read: dict[str, Any] = json.loads(run_session_script(pi_node, "read", path, version=version))
    assert read["messages"] == [to_dict(message) for message in messages]
    # The agent rewrites a file of an older format version when it opens it: ours is current.
    assert path.read_bytes() == written


@pytest.mark.parametrize("version", VERSIONS)
def test_a_session_the_pi_coding_agent_wrote_loads_as_the_same_transcript(
    pi_node: str, tmp_path: Path, version: str
) -> None:
    path = tmp_path / "written.jsonl"
    messages = transcript()
    given = json.dumps([to_dict(m) for m in messages])
    run_session_script(pi_node, "write", path, given, version=version)
    kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert kinds[:3] == ["session", "model_change", "thinking_level_change"]
    assert kinds[-1] == "session_info"
    assert load_session(path) == messages


def test_a_compacted_branched_session_loads_as_the_pi_coding_agent_sends_it(
    pi_node: str, tmp_path: Path
) -> None:
    path = tmp_path / "compacted.jsonl"
    run_session_script(pi_node, "compact", path)
    sent: list[dict[str, Any]] = json.loads(run_session_script(pi_node, "read", path))["llm"]
    loaded = [to_dict(message) for message in load_session(path)]
    assert loaded == sent
    texts = json.dumps(loaded)
    assert loaded[0]["content"][0]["text"].startswith("The conversation history before this")
    assert "Ran `ls`" in texts and "code 1" in texts and "/tmp/out.log" in texts
    assert "A note from an extension" in texts and "image/png" in texts
    assert (
        "Tried a different approach." in texts and loaded[-1]["content"][0]["text"] == "Last reply"
    )
    for left_out in ("Compacted away", "hidden", "Abandoned branch"):
        assert left_out not in texts


@pytest.mark.parametrize("version", VERSIONS)
def test_a_compacted_branched_session_we_wrote_opens_with_the_same_messages(
    pi_node: str, tmp_path: Path, version: str
) -> None:
    path = tmp_path / "ours.jsonl"
    with SessionFile.create(path) as session:
        for message in transcript():
            session.append(message)
        compaction = Compaction("We read notes.txt.", 2, 321, timestamp=1_700_000_005_000)
        at = session.append_compaction(compaction)
        session.append(UserMessage("Abandoned", timestamp=1_700_000_006_000))
        session.branch(at)
        session.append(UserMessage("Another way", timestamp=1_700_000_007_000))
        ours = [to_dict(message) for message in session.messages()]
    sent = json.loads(run_session_script(pi_node, "read", path, version=version))["llm"]
    assert sent == ours
    assert ours[0]["content"][0]["text"].startswith("The conversation history before this point")
    assert "Abandoned" not in json.dumps(ours) and ours[-1]["content"] == "Another way"


def test_a_session_pi_160_wrote_with_system_messages_gives_exactly_its_context(
    pi_node: str, tmp_path: Path
) -> None:
    path = tmp_path / "pi160.jsonl"
    run_session_script(pi_node, "compact", path, version="160")
    sent: list[dict[str, Any]] = json.loads(
        run_session_script(pi_node, "read", path, version="160")
    )["llm"]
    with SessionFile.open(path, read_only=True) as session:
        loaded = [to_dict(message) for message in session.messages()]
        kinds = {entry["type"] for entry in session.entries}
    assert {"usage", "context_edit", "compaction", "branch_summary"} <= kinds
    assert loaded == sent
    assert [m["role"] for m in loaded][:2] == ["system", "user"]
    assert loaded[0]["sections"] == {"rules": "Be very brief.", "cwd": "/tmp"}  # replayed
    texts = json.dumps(loaded)
    assert "Edited in" in texts and "A note from an extension" in texts
    for left_out in ("Compacted away", "Edited away", "Omitted reply", "hidden", "Abandoned"):
        assert left_out not in texts


@pytest.mark.anyio
@pytest.mark.parametrize("version", VERSIONS)
async def test_a_recorded_compacted_agent_session_opens_in_pi_as_the_agent_has_it(
    pi_node: str, tmp_path: Path, version: str
) -> None:
    faux = FauxProvider(models=[{"id": "m", "context_window": 600}])
    faux.set_responses([faux_assistant_message(f"answer {n} " + "x" * 400) for n in range(2)])
    faux.append_responses([faux_assistant_message("We spoke twice."), faux_assistant_message("ok")])
    path = tmp_path / "agent.jsonl"
    agent = Agent(
        model=faux.get_model(),
        stream_fn=faux.stream,
        system_prompt="Be brief.",
        tools=[echo],
        compaction=CompactionPolicy(keep_recent_tokens=10),
    )
    with SessionFile.create(path) as session:
        record(agent, session)
        for n in range(3):
            await agent.prompt(f"question {n} " + "y" * 300)
        assert agent.state.compactions >= 1
        assert session.messages() == agent.state.messages
    ours = [to_dict(message) for message in agent.state.messages]
    sent = json.loads(run_session_script(pi_node, "read", path, version=version))["llm"]
    if version == "073":  # 0.73.1 knows no system messages: its convertToLlm drops them
        ours = [message for message in ours if message["role"] != "system"]
    assert sent == ours
