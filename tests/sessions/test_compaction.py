"""Compaction, scripted with the faux provider on both backends: what the summary request holds,
where the kept tail starts, when the threshold triggers, the overflow retry, an abort during
compaction, and the compaction entry a recorded session gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_core import (
    Agent,
    AgentMessage,
    AssistantMessage,
    CompactionError,
    CompactionPolicy,
    Context,
    SystemMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    compact,
    estimate_tokens,
    tool,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_core.sessions import SessionFile, record

pytestmark = pytest.mark.anyio

LONG = "x" * 700  # 200 tokens


@tool
def look(path: str) -> str:
    """Look at a path."""
    return f"contents of {path} " + "y" * 350


class Requests:
    """A faux step that records the context it was asked with, then replies ``reply``."""

    def __init__(self) -> None:
        self.contexts: list[Context] = []

    def step(self, reply: str | AssistantMessage) -> Any:
        def answer(context: Context, *_: Any) -> AssistantMessage:
            self.contexts.append(context)
            return reply if isinstance(reply, AssistantMessage) else faux_assistant_message(reply)

        return answer


def is_summary_request(context: Context) -> bool:
    first = context.messages[0] if context.messages else None
    return isinstance(first, UserMessage) and "<conversation>" in str(first.content)


def chat(turns: int) -> list[AgentMessage]:
    messages: list[AgentMessage] = []
    for n in range(turns):
        messages.append(UserMessage(f"question {n} {LONG}", timestamp=n))
        messages.append(
            AssistantMessage([TextContent(f"answer {n} {LONG}")], "faux", "faux", "m", timestamp=n)
        )
    return messages


async def test_the_summary_request_holds_the_older_messages_and_no_tools() -> None:
    faux = FauxProvider(models=[{"id": "m", "context_window": 100_000}])
    requests = Requests()
    faux.set_responses([requests.step("The user asked four questions.")])
    messages = chat(4)
    compaction = await compact(
        messages, model=faux.get_model(), stream_fn=faux.stream, keep_recent_tokens=300
    )
    (request,) = requests.contexts
    assert request.tools == []
    text = str(request.messages[0].content)
    assert "question 0" in text and "answer 2" in text and "question 3" not in text
    assert compaction.first_kept_index == 6  # the last question and its answer stay
    assert compaction.summary == "The user asked four questions."
    assert compaction.tokens_before == estimate_tokens(messages)


def test_the_kept_tail_never_starts_at_a_tool_result() -> None:
    from pi_core._compaction import find_cut

    call = AssistantMessage([faux_tool_call("look", {"path": "a"})], "f", "f", "m")
    result = ToolResultMessage(call.content[0].id, "look", [TextContent(LONG * 3)])  # type: ignore[union-attr]
    messages: list[AgentMessage] = [*chat(2), call, result]
    # The result alone is worth the budget, but the cut goes back to its call.
    assert messages[find_cut(messages, 100)] is call


def test_the_leading_system_message_is_no_part_of_the_conversation_to_summarise() -> None:
    from pi_core._compaction import find_cut

    messages: list[AgentMessage] = [SystemMessage("Be brief."), *chat(2)]
    # However much is to be kept, the first question stays summarisable: the cut comes after it.
    assert find_cut(messages, 1_000_000) == 2


async def test_the_threshold_compacts_before_the_request_that_would_cross_it() -> None:
    faux = FauxProvider(models=[{"id": "m", "context_window": 1_000}])
    requests = Requests()
    call = faux_assistant_message([faux_tool_call("look", {"path": "p"})], "toolUse")
    faux.set_responses(
        [
            requests.step(call),
            requests.step(call),
            requests.step("summary of the looking"),
            requests.step("done"),
        ]
    )
    agent = Agent(
        model=faux.get_model(),
        stream_fn=faux.stream,
        tools=[look],
        messages=chat(1),
        compaction=CompactionPolicy(threshold=0.6, keep_recent_tokens=100),
    )
    result = await agent.prompt("look twice")
    assert result.error_message is None
    kinds = ["summary" if is_summary_request(c) else "turn" for c in requests.contexts]
    assert kinds == ["turn", "turn", "summary", "turn"]
    last = requests.contexts[-1]
    assert estimate_tokens(last.messages) <= 0.6 * 1_000
    # The system message declaring the prompt and tools stays in front of the summary.
    leading = last.messages[0]
    assert isinstance(leading, SystemMessage) and leading.tools_added
    assert "summary of the looking" in str(last.messages[1].content)
    assert agent.state.compactions == 1


async def test_an_overflow_compacts_and_retries_once_then_gives_up_clearly() -> None:
    overflow = faux_assistant_message(
        "", "error", "400 Bad Request: prompt is too long: 213462 tokens > 200000 maximum"
    )
    faux = FauxProvider(models=[{"id": "m", "context_window": 1_000_000}])
    faux.set_responses([overflow, faux_assistant_message("summary"), faux_assistant_message("ok")])
    agent = Agent(
        model=faux.get_model(),
        stream_fn=faux.stream,
        messages=chat(3),
        compaction=CompactionPolicy(keep_recent_tokens=10),
    )
    result = await agent.prompt("go on")
    assert result.error_message is None and result.text == "ok"
    assert agent.state.compactions == 1
    assert overflow not in agent.state.messages

    faux.set_responses([overflow, faux_assistant_message("summary"), overflow])
    agent.messages = chat(3)
    result = await agent.prompt("again")
    assert result.error_message is not None
    assert result.error_message.startswith("The context is still too long for the model after")
    assert faux.pending_response_count == 0  # one retry, not more


async def test_an_abort_during_compaction_stops_it_and_the_run() -> None:
    faux = FauxProvider(models=[{"id": "m", "context_window": 1_000}])
    started = anyio.Event()
    agent = Agent(
        model=faux.get_model(),
        stream_fn=lambda model, context, options: _slow(faux, model, context, options, started),
        messages=chat(3),
        compaction=CompactionPolicy(keep_recent_tokens=10),
    )
    faux.set_responses([faux_assistant_message("never")])
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                result = await agent.prompt("hi")
                assert result.outcome.value == "aborted"

            tg.start_soon(run)
            await started.wait()
            agent.abort("stop")
    assert agent.state.compactions == 0
    assert faux.call_count == 0  # the run made no request after the aborted compaction


async def _slow(
    faux: FauxProvider, model: Any, context: Context, options: Any, started: anyio.Event
) -> Any:
    if is_summary_request(context):
        started.set()
        await anyio.sleep_forever()
    return faux.stream(model, context, options)


async def test_a_recorded_session_gets_the_compaction_entry(tmp_path: Path) -> None:
    faux = FauxProvider(models=[{"id": "m", "context_window": 1_000}])
    faux.set_responses(
        [faux_assistant_message(f"answer {LONG}") for _ in range(2)]
        + [faux_assistant_message("what we said"), faux_assistant_message("fine")]
    )
    path = tmp_path / "chat.jsonl"
    session = SessionFile.create(path)
    agent = Agent(
        model=faux.get_model(),
        stream_fn=faux.stream,
        compaction=CompactionPolicy(keep_recent_tokens=10),
    )
    record(agent, session)
    for n in range(3):
        await agent.prompt(f"question {n} {LONG}")
    session.close()
    assert agent.state.compactions >= 1
    with SessionFile.open(path, read_only=True) as reopened:
        kinds = [e["type"] for e in reopened.entries]
        assert "compaction" in kinds
        assert reopened.messages() == agent.state.messages
    with pytest.raises(CompactionError, match="Nothing to compact"):
        await compact([UserMessage("hi")], model=faux.get_model(), stream_fn=faux.stream)


async def test_a_recorded_overflow_leaves_the_failed_reply_on_a_branch_of_its_own(
    tmp_path: Path,
) -> None:
    overflow = faux_assistant_message(
        "", "error", "400 Bad Request: Your input exceeds the context window of this model."
    )
    faux = FauxProvider(models=[{"id": "m", "context_window": 1_000_000}])
    faux.set_responses([overflow, faux_assistant_message("summary"), faux_assistant_message("ok")])
    path = tmp_path / "chat.jsonl"
    with SessionFile.create(path) as session:
        agent = Agent(
            model=faux.get_model(),
            stream_fn=faux.stream,
            messages=chat(3),
            compaction=CompactionPolicy(keep_recent_tokens=10),
        )
        record(agent, session)
        assert (await agent.prompt("go on")).text == "ok"
        assert session.messages() == agent.state.messages
    with SessionFile.open(path, read_only=True) as reopened:
        assert reopened.messages() == agent.state.messages
        failed = next(
            e for e in reopened.entries if e.get("message", {}).get("stopReason") == "error"
        )
        assert failed["id"] not in {e["id"] for e in reopened.branch_entries()}
