"""Tool calls held for approval: held before any event, listed from the transcript alone,
resolved in the same process or in another one, with every call answered once."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from control._support import SCHEMA, Tools, text_reply, tool_reply
from pi_core import (
    Agent,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    Approve,
    BeforeToolCallContext,
    Deny,
    PendingToolCall,
    RunLimits,
    RunOutcome,
    ToolExecution,
    ToolResultMessage,
    UserMessage,
    pending_tool_calls,
    resolve_tool_calls,
    run_agent_loop,
    serialization,
)
from pi_core.testing import (
    EventGrammarError,
    ScriptedStream,
    check_event_grammar,
    check_transcript,
)

pytestmark = pytest.mark.anyio

MODES: list[ToolExecution] = ["parallel", "sequential"]


class Pay:
    """A tool that needs approval for amounts over 10, and counts its executions."""

    def __init__(self) -> None:
        self.paid: list[str] = []

    @staticmethod
    def needs_approval(args: dict[str, Any]) -> str | bool:
        return f"pays {args['n']}" if args["n"] > 10 else False

    async def _execute(self, call_id: str, params: Any, signal: Any, on_update: Any) -> str:
        self.paid.append(call_id)
        return f"paid {params['n']}"

    def tool(self) -> AgentTool:
        return AgentTool(
            "pay", "Pay.", SCHEMA, self._execute, requires_approval=self.needs_approval
        )


def _mixed_reply() -> Any:
    """A reply calling work, pay 50 (held), pay 5 (not held) and pay 99 (held)."""
    reply = tool_reply("w1")
    for call_id, amount in (("p50", 50), ("p5", 5), ("p99", 99)):
        extra = tool_reply(call_id, name="pay")
        extra.content[0].arguments = {"n": amount}  # type: ignore[union-attr]
        reply.content += extra.content
    return reply


def _setup(mode: ToolExecution) -> tuple[Agent, ScriptedStream, Tools, Pay, list[Any], list[str]]:
    stream = ScriptedStream([_mixed_reply()], default=text_reply("all settled"))
    tools, pay = Tools(), Pay()
    asked: list[str] = []

    def before(context: BeforeToolCallContext, signal: Any) -> None:
        asked.append(context.tool_call.id)

    agent = Agent(
        model=stream.model,
        stream_fn=stream,
        tools=[tools.work(), pay.tool()],
        tool_execution=mode,
        before_tool_call=before,
    )
    events: list[Any] = []
    agent.subscribe(events.append)
    return agent, stream, tools, pay, events, asked


def _ids(events: list[Any], kind: str) -> list[str]:
    return [event.tool_call_id for event in events if event.type == kind]


@pytest.mark.parametrize("mode", MODES)
async def test_a_mixed_batch_runs_the_free_calls_and_holds_the_others(mode: ToolExecution) -> None:
    agent, stream, tools, pay, events, asked = _setup(mode)
    with anyio.fail_after(10):
        result = await agent.prompt("settle up")
    held = [
        PendingToolCall("p50", "pay", {"n": 50}, "pays 50"),
        PendingToolCall("p99", "pay", {"n": 99}, "pays 99"),
    ]
    assert result.pending == held and agent.state.pending_approvals == held
    assert result.outcome is RunOutcome.PENDING and result.ok
    assert stream.calls == 1
    assert tools.ran == ["w1"] and pay.paid == ["p5"]
    # A held call has no event at all, and its before_tool_call is not asked.
    assert _ids(events, "tool_execution_start") == ["w1", "p5"]
    assert asked == ["w1", "p5"]
    turn_end = [event for event in events if event.type == "turn_end"][-1]
    assert [r.tool_call_id for r in turn_end.tool_results] == ["w1", "p5"]
    assert events[-1].type == "agent_end"
    check_event_grammar(events, allow_held=True)
    check_transcript(agent.messages, allow_held=True)


@pytest.mark.parametrize("mode", MODES)
async def test_resolving_runs_the_approved_and_answers_the_denied(mode: ToolExecution) -> None:
    agent, stream, _tools, pay, events, asked = _setup(mode)
    with anyio.fail_after(10):
        await agent.prompt("settle up")
        del events[:]
        result = await agent.resolve({"p50": Approve(), "p99": Deny("too much")})
    assert pay.paid == ["p5", "p50"]
    assert asked == ["w1", "p5", "p50"]  # a denied call's hook is never asked
    assert _ids(events, "tool_execution_start") == ["p50", "p99"]
    denied = _result(agent, "p99")
    assert denied.is_error and denied.content[0].text == "Tool call denied: too much"  # type: ignore[union-attr]
    assert _result(agent, "p50").content[0].text == "paid 50"  # type: ignore[union-attr]
    # The run went on with the next request.
    assert stream.calls == 2 and result.text == "all settled"
    assert result.outcome is RunOutcome.DONE and result.pending == []
    assert agent.state.pending_approvals == []
    check_event_grammar(events, allow_held=True)
    check_transcript(agent.messages, allow_held=True)


@pytest.mark.parametrize("mode", MODES)
async def test_a_run_that_waits_for_its_decisions_is_one_run_to_the_grammar(
    mode: ToolExecution,
) -> None:
    """As a durable run emits it: the holding run and the resolving one without the
    ``agent_end`` and ``agent_start`` between them; the resolving turn must start every held
    call."""
    agent, _stream, _tools, _pay, events, _asked = _setup(mode)
    with anyio.fail_after(10):
        await agent.prompt("settle up")
        await agent.resolve({"p50": Approve(), "p99": Deny("too much")})
    between = next(index for index, event in enumerate(events) if event.type == "agent_end")
    assert events[between + 1].type == "agent_start"
    joined = events[:between] + events[between + 2 :]
    check_event_grammar(joined, allow_held=True)
    with pytest.raises(EventGrammarError):  # holding is not allowed there at all
        check_event_grammar(joined)
    p99_message = _result(agent, "p99")
    unresolved = [
        event
        for event in joined
        if getattr(event, "tool_call_id", None) != "p99"
        and getattr(event, "message", None) is not p99_message
    ]
    with pytest.raises(EventGrammarError, match=r"tool_execution_start\('p99'\), a held call"):
        check_event_grammar(unresolved, allow_held=True)


async def test_a_denial_without_a_reason() -> None:
    agent, _stream, _tools, pay, _events, _asked = _setup("parallel")
    with anyio.fail_after(10):
        await agent.prompt("settle up")
        await agent.resolve({"p50": Deny(), "p99": Deny()})
    assert pay.paid == ["p5"]
    assert _result(agent, "p50").content[0].text == "Tool call denied"  # type: ignore[union-attr]


async def test_decisions_are_checked_before_anything_runs() -> None:
    agent, stream, _tools, pay, _events, _asked = _setup("parallel")
    with anyio.fail_after(10):
        await agent.prompt("settle up")
    with pytest.raises(ValueError, match="no decision for: 'p99'"):
        await agent.resolve({"p50": Approve()})
    with pytest.raises(ValueError, match="not pending: 'w1'"):
        await agent.resolve({"p50": Approve(), "p99": Approve(), "w1": Approve()})
    with pytest.raises(ValueError, match="not Approve\\(\\) or Deny\\(\\): 'p99': 'yes'"):
        await agent.resolve({"p50": Approve(), "p99": "yes"})  # type: ignore[dict-item]
    assert pay.paid == ["p5"] and stream.calls == 1
    assert len(agent.state.pending_approvals) == 2


async def test_prompt_and_continue_refuse_while_calls_wait() -> None:
    agent, stream, _tools, _pay, _events, _asked = _setup("parallel")
    with anyio.fail_after(10):
        await agent.prompt("settle up")
    with pytest.raises(ValueError, match="resolve\\(\\) them first"):
        await agent.prompt("and another thing")
    with pytest.raises(ValueError, match=r"Cannot continue: .*\('p50', 'p99'\); resolve"):
        await agent.continue_()
    assert stream.calls == 1


async def test_resolve_with_nothing_held_is_refused() -> None:
    stream = ScriptedStream([text_reply()])
    agent = Agent(model=stream.model, stream_fn=stream)
    with anyio.fail_after(10):
        await agent.prompt("hi")
    with pytest.raises(ValueError, match="no tool calls are waiting"):
        await agent.resolve({})


async def test_a_flag_that_raises_is_that_calls_error_result() -> None:
    def broken(args: Any) -> bool:
        raise RuntimeError("cannot tell")

    tools = Tools()
    stream = ScriptedStream([tool_reply("w1"), text_reply()], default=text_reply("unused"))
    stream.replies[0].content += tool_reply("b1", name="odd").content
    odd = AgentTool("odd", "Odd.", SCHEMA, tools._work, requires_approval=broken)
    agent = Agent(model=stream.model, stream_fn=stream, tools=[tools.work(), odd])
    events: list[Any] = []
    agent.subscribe(events.append)
    with anyio.fail_after(10):
        result = await agent.prompt("go")
    answer = _result(agent, "b1")
    assert answer.is_error and answer.content[0].text == "cannot tell"  # type: ignore[union-attr]
    assert tools.ran == ["w1"] and result.outcome is RunOutcome.DONE and result.pending == []
    check_event_grammar(events)


async def test_a_limit_reached_by_the_holding_reply_still_reports_the_pending_calls() -> None:
    agent, stream, _tools, pay, _events, _asked = _setup("parallel")
    agent.limits = RunLimits(max_turns=1)
    with anyio.fail_after(10):
        result = await agent.prompt("settle up")
    assert result.outcome is RunOutcome.PENDING and len(result.pending) == 2
    with anyio.fail_after(10):
        resolved = await agent.resolve({"p50": Approve(), "p99": Approve()})
    # The approved calls ran under the limits, and the run made one more request.
    assert sorted(pay.paid) == ["p5", "p50", "p99"] and stream.calls == 2
    assert resolved.stopped_by is not None and resolved.stopped_by.kind == "max_turns"


async def test_the_loop_returns_with_the_held_calls_and_resolves_them() -> None:
    stream = ScriptedStream([_mixed_reply()], default=text_reply("all settled"))
    tools, pay = Tools(), Pay()
    config = AgentLoopConfig(stream.model, stream_fn=stream)
    context = AgentContext("", [], [tools.work(), pay.tool()])
    events: list[Any] = []
    with anyio.fail_after(10):
        new = await run_agent_loop([UserMessage("go")], context, config, events.append)
    check_event_grammar(events, allow_held=True)
    assert [p.tool_call_id for p in pending_tool_calls(new, context.tools)] == ["p50", "p99"]
    context.messages = new
    events.clear()
    with anyio.fail_after(10):
        more = await resolve_tool_calls(
            {"p50": Approve(), "p99": Deny()}, context, config, events.append
        )
    check_event_grammar(events, allow_held=True)
    assert pay.paid == ["p5", "p50"]
    assert [getattr(m, "tool_call_id", m.role) for m in more] == ["p50", "p99", "assistant"]
    with pytest.raises(ValueError, match="no decision"):
        await resolve_tool_calls({}, context, config, events.append)


# --- a fresh process ----------------------------------------------------------------------------

_PROCESS = """
import json, sys
from pathlib import Path
import anyio
from pi_core import Agent, AgentMessage, AgentTool, Approve, Deny, ToolCall, serialization
from pi_core.testing import ScriptedStream, scripted_reply

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
step, transcript, ledger = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

async def pay(call_id, params, signal, on_update):
    with ledger.open("a") as file:
        file.write(call_id + "\\n")
    return f"paid {params['n']}"

def needs(args):
    return f"pays {args['n']}" if args["n"] > 10 else False

tools = [AgentTool("pay", "Pay.", SCHEMA, pay, requires_approval=needs)]
calls = [ToolCall("p1", "pay", {"n": 5}), ToolCall("p2", "pay", {"n": 70}),
         ToolCall("p3", "pay", {"n": 80})]
replies = [scripted_reply(*calls)] if step == "hold" else []
stream = ScriptedStream(replies, default=scripted_reply("settled"))

async def main():
    if step == "hold":
        agent = Agent(model=stream.model, stream_fn=stream, tools=tools)
        result = await agent.prompt("pay them")
        transcript.write_text(serialization.dumps(agent.messages))
        print(json.dumps([result.outcome, [p.tool_call_id for p in result.pending]]))
    else:
        messages = serialization.loads(transcript.read_text(), list[AgentMessage])
        agent = Agent(model=stream.model, stream_fn=stream, tools=tools, messages=messages)
        pending = [[p.tool_call_id, p.args, p.reason] for p in agent.state.pending_approvals]
        result = await agent.resolve({"p2": Approve(), "p3": Deny("not today")})
        print(json.dumps([pending, result.outcome, result.text, stream.calls]))
        transcript.write_text(serialization.dumps(agent.messages))

anyio.run(main)
"""


async def test_an_agent_in_a_fresh_process_resolves_calls_held_by_another(
    tmp_path: Path,
) -> None:
    script, transcript, ledger = tmp_path / "agent.py", tmp_path / "t.json", tmp_path / "ledger"
    script.write_text(_PROCESS)

    async def step(name: str) -> Any:
        with anyio.fail_after(60):
            done = await anyio.run_process(
                [sys.executable, str(script), name, str(transcript), str(ledger)]
            )
        return json.loads(done.stdout)

    assert await step("hold") == ["pending", ["p2", "p3"]]
    assert ledger.read_text().split() == ["p1"]
    pending, outcome, text, calls = await step("resolve")
    # The second process knows the held calls from the JSON alone; its tool gives the reasons.
    assert pending == [["p2", {"n": 70}, "pays 70"], ["p3", {"n": 80}, "pays 80"]]
    assert (outcome, text, calls) == ("done", "settled", 1)
    assert ledger.read_text().split() == ["p1", "p2"]  # each call ran exactly once
    final = serialization.loads(transcript.read_text(), list[AgentMessage])
    check_transcript(final, allow_held=True)
    denied = [m for m in final if isinstance(m, ToolResultMessage) and m.tool_call_id == "p3"]
    assert denied[0].content[0].text == "Tool call denied: not today"  # type: ignore[union-attr]


def _result(agent: Agent, call_id: str) -> ToolResultMessage:
    [result] = [
        m for m in agent.messages if isinstance(m, ToolResultMessage) and m.tool_call_id == call_id
    ]
    return result
