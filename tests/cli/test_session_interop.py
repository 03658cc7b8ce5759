"""``/save`` and ``/load`` against the TypeScript Pi coding agent 0.73.1 itself: its session
manager opens what pi_core saved and rebuilds the same messages, pi_core loads the same
transcript from a file the agent wrote, and from a compacted, branched file with the agent's own
kinds of message the messages the agent would send a model (needs node >= 20 and npm; ``npm ci`` runs in
tests/cli/pi_interop, and the tests skip, saying why, without them)."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from node_interop import NODE_DEADLINE, find_node
from pi_core import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_core.cli._session_file import load_session, save_session
from pi_core.serialization import to_dict

SESSION_INTEROP = Path(__file__).parent / "pi_interop"
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n not really a picture").decode()


@pytest.fixture(scope="module")
def pi_node() -> str:
    """Node with the Pi coding agent 0.73.1 installed in tests/cli/pi_interop."""
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


def run_session_script(node: str, mode: str, path: Path, stdin: str = "") -> str:
    done = subprocess.run(
        [node, str(SESSION_INTEROP / "session.mjs"), mode, str(path)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=NODE_DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_pi_coding_agent_opens_a_saved_session_with_the_same_messages(
    pi_node: str, tmp_path: Path
) -> None:
    path = tmp_path / "saved.jsonl"
    messages = transcript()
    save_session(path, messages)
    written = path.read_bytes()
    read: dict[str, Any] = json.loads(run_session_script(pi_node, "read", path))
    assert read["messages"] == [to_dict(message) for message in messages]
    # The agent rewrites a file of an older format version when it opens it: ours is current.
    assert path.read_bytes() == written


def test_a_session_the_pi_coding_agent_wrote_loads_as_the_same_transcript(
    pi_node: str, tmp_path: Path
) -> None:
    path = tmp_path / "written.jsonl"
    messages = transcript()
    run_session_script(pi_node, "write", path, json.dumps([to_dict(m) for m in messages]))
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
