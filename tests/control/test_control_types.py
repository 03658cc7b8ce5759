"""The data of run control: limits refuse bad values, decisions are checked, held calls are read
from a transcript alone, a run's usage adds up its replies."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pi_core import (
    AgentTool,
    Approve,
    AssistantMessage,
    Deny,
    LimitReached,
    PendingToolCall,
    RunLimits,
    RunOutcome,
    RunResult,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UsageCost,
    UserMessage,
    pending_tool_calls,
    tool,
)
from pi_core._approvals import check_decisions
from pi_core.lowlevel import limits_left

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}


async def _never(*_args: Any) -> str:
    raise AssertionError("a held call never runs")


def _reply(*calls: ToolCall, stop_reason: Any = "toolUse", usage: Usage | None = None) -> Any:
    return AssistantMessage(
        list(calls), "faux", "faux", "m", usage or Usage(), stop_reason=stop_reason
    )


def _result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(call_id, "t", [TextContent("ok")])


@pytest.mark.parametrize(
    "field", ["max_turns", "max_input_tokens", "max_output_tokens", "max_total_tokens"]
)
@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3"])
def test_a_count_limit_must_be_a_positive_int(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        RunLimits(**{field: value})


@pytest.mark.parametrize("field", ["max_cost", "deadline"])
@pytest.mark.parametrize("value", [0, 0.0, -0.5, math.nan, False, "1"])
def test_cost_and_deadline_must_be_positive_numbers(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        RunLimits(**{field: value})


def test_limits_take_positive_values_and_default_to_none() -> None:
    assert RunLimits() == RunLimits(None, None, None, None, None, None)
    limits = RunLimits(max_turns=3, max_cost=0.01, deadline=2)
    assert (limits.max_turns, limits.max_cost, limits.deadline) == (3, 0.01, 2)


def test_the_held_calls_are_the_unanswered_calls_of_the_last_reply() -> None:
    a, b, c = (ToolCall(i, "t", {"n": 1}) for i in "abc")
    messages = [UserMessage("go"), _reply(a, b, c), _result("b")]
    assert [p.tool_call_id for p in pending_tool_calls(messages)] == ["a", "c"]
    assert pending_tool_calls(messages)[0] == PendingToolCall("a", "t", {"n": 1}, None)


def test_a_failed_or_answered_reply_holds_nothing() -> None:
    a = ToolCall("a", "t", {"n": 1})
    assert pending_tool_calls([_reply(a, stop_reason="error")]) == []
    assert pending_tool_calls([_reply(a, stop_reason="aborted")]) == []
    assert pending_tool_calls([_reply(a), _result("a")]) == []
    assert pending_tool_calls([UserMessage("hi")]) == []


def test_the_tools_give_the_held_calls_their_validated_args_and_reason_again() -> None:
    def why(args: dict[str, Any]) -> str | bool:
        return f"n is {args['n']}" if args["n"] > 1 else False

    held = AgentTool("t", "", SCHEMA, _never, requires_approval=why)
    call = ToolCall("a", "t", {"n": "2"})  # coerced to an int by validation
    [pending] = pending_tool_calls([_reply(call)], [held])
    assert pending == PendingToolCall("a", "t", {"n": 2}, "n is 2")


def test_a_flag_that_fails_on_the_transcript_leaves_no_reason() -> None:
    def broken(_args: object) -> bool:
        raise RuntimeError("no")

    held = AgentTool("t", "", SCHEMA, _never, requires_approval=broken)
    [pending] = pending_tool_calls([_reply(ToolCall("a", "t", {}))], [held])
    assert pending == PendingToolCall("a", "t", {}, None)  # {} fails validation: raw args


def test_the_decorator_takes_requires_approval() -> None:
    @tool(requires_approval=True)
    async def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    async def look(path: str) -> str:
        """Look."""
        return path

    assert pay.requires_approval is True
    assert tool(look).requires_approval is False


def test_decisions_must_cover_every_pending_call_and_nothing_else() -> None:
    pending = [PendingToolCall("a", "t", {}), PendingToolCall("b", "t", {})]
    decided = {"a": Approve(), "b": Deny("no")}
    assert check_decisions(decided, pending) == decided
    with pytest.raises(ValueError, match="no decision for: 'b'"):
        check_decisions({"a": Approve()}, pending)
    with pytest.raises(ValueError, match="not pending: 'zz'"):
        check_decisions({**decided, "zz": Approve()}, pending)
    with pytest.raises(ValueError, match="not Approve\\(\\) or Deny\\(\\): 'a': True"):
        check_decisions({"a": True, "b": Deny()}, pending)


def test_a_result_adds_up_the_usage_of_its_replies() -> None:
    first = Usage(10, 5, 1, 0, 16, UsageCost(0.1, 0.2, 0.0, 0.0, 0.3))
    second = Usage(1, 2, 0, 3, 6, UsageCost(0.01, 0.02, 0.0, 0.03, 0.06))
    result = RunResult([_reply(usage=first), UserMessage("x"), _reply(usage=second)], None)
    assert result.usage == Usage(11, 7, 1, 3, 22, UsageCost(0.11, 0.22, 0.0, 0.03, 0.36))
    assert result.stopped_by is None and result.pending == ()
    assert result.outcome is RunOutcome.DONE and result.ok


def test_limits_left_are_the_limits_less_the_replies_spending() -> None:
    limits = RunLimits(max_turns=3, max_total_tokens=100, max_cost=1.0, deadline=9)
    reply = Usage(input=10, output=20, total_tokens=30, cost=UsageCost(total=0.25))
    assert limits_left(limits, [reply, reply]) == RunLimits(
        max_turns=1, max_total_tokens=40, max_cost=0.5, deadline=9
    )
    assert limits_left(limits, []) == limits


def test_limits_left_is_the_limit_the_replies_reached() -> None:
    reply = Usage(input=10, output=20, total_tokens=30)
    reached = limits_left(RunLimits(max_output_tokens=50, max_turns=9), [reply] * 3)
    assert reached == LimitReached("max_output_tokens", 50, 60)
