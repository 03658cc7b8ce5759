"""What the pi_core.ui tests share: agents on the demo model, Node clients, the AG-UI grammar."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import anyio
from ag_ui.core import Event
from pydantic import TypeAdapter

from pi_core import Agent, AssistantMessage, Context, Model, ToolResultMessage, tool
from pi_core.cli._setup import AgentSettings, build_agent
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_text, faux_tool_call

__all__ = [
    "NODE_DIR",
    "AgentRecorder",
    "approving_agent",
    "check_ag_ui_grammar",
    "demo_agent",
    "run_node",
]

NODE_DIR = Path(__file__).parent / "node"
NODE_DEADLINE = 60.0
_EVENT = TypeAdapter(Event)


def demo_agent() -> Agent:
    """The demo agent of ``pi-core chat`` (its tools and research sub-agent), unpaced."""
    agent, _ = build_agent(AgentSettings(json=True))
    return agent


class AgentRecorder:
    """An agent factory that keeps every Agent it made, so a test can look at them after."""

    def __init__(self, make: Any = demo_agent) -> None:
        self.make = make
        self.agents: list[Agent] = []

    def __call__(self) -> Agent:
        agent: Agent = self.make()
        self.agents.append(agent)
        return agent


async def run_node(node: str, script: str, *args: str) -> Any:
    """Run ``tests/ui/node/<script>`` and return the JSON it printed."""
    with anyio.fail_after(NODE_DEADLINE):
        done = await anyio.run_process(
            [node, str(NODE_DIR / script), *args], check=False, cwd=NODE_DIR
        )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def check_ag_ui_grammar(
    events: Sequence[dict[str, Any]], earlier_calls: Collection[str] = ()
) -> None:
    """Each event is one of the protocol's (by the Python ``ag-ui-protocol`` types), and the
    stream has the protocol's shape: one run, every message and tool call opened, then closed,
    each result for a call of this stream or of ``earlier_calls`` (a resumed run's)."""
    for event in events:
        _EVENT.validate_python(event)
    types = [event["type"] for event in events]
    assert types[0] == "RUN_STARTED"
    assert types[-1] in ("RUN_FINISHED", "RUN_ERROR")
    assert (
        types.count("RUN_STARTED") == 1
        and types.count("RUN_FINISHED") + types.count("RUN_ERROR") == 1
    )
    open_texts: set[str] = set()
    open_calls: set[str] = set()
    ended_calls: set[str] = set(earlier_calls)
    for event in events:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in open_texts
            open_texts.add(event["messageId"])
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event["messageId"] in open_texts and event["delta"]
        elif kind == "TEXT_MESSAGE_END":
            open_texts.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            open_calls.add(event["toolCallId"])
        elif kind == "TOOL_CALL_ARGS":
            assert event["toolCallId"] in open_calls
        elif kind == "TOOL_CALL_END":
            open_calls.remove(event["toolCallId"])
            ended_calls.add(event["toolCallId"])
        elif kind == "TOOL_CALL_RESULT":
            assert event["toolCallId"] in ended_calls
    assert not open_texts and not open_calls


def approving_agent() -> Agent:
    """An agent whose first reply asks for ``delete_file`` (which needs a person's approval) and
    ``calculate`` at once; once the results are in, it says what happened."""
    faux = FauxProvider(tokens_per_second=None)

    def reply(context: Context, options: Any, call_count: int, model: Model) -> AssistantMessage:
        last = context.messages[-1]
        if isinstance(last, ToolResultMessage):
            results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
            lines = [
                f"{r.tool_name}: {''.join(getattr(b, 'text', '') for b in r.content)}"
                for r in results
            ]
            return faux_assistant_message("\n".join(lines))
        calls = [
            faux_tool_call("delete_file", {"path": "notes.txt"}),
            faux_tool_call("calculate", {"expression": "6*7"}),
        ]
        return faux_assistant_message([faux_text("Deleting it."), *calls], stop_reason="toolUse")

    class Responder:
        def stream(self, model: Model, context: Context, options: Any) -> Any:
            faux.append_responses([reply])
            return faux.stream(model, context, options)

    @tool(requires_approval=lambda args: f"deletes {args['path']}")
    async def delete_file(path: str) -> str:
        """Delete a file (asks first)."""
        return f"deleted {path}"

    tools = [t for t in build_agent(AgentSettings(json=True))[0].tools if t.name == "calculate"]
    return Agent(model=faux.get_model(), stream_fn=Responder().stream, tools=[delete_file, *tools])
