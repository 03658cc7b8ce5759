"""The demo model's plans, the live renderer and the Ctrl-C watcher, in process."""

from __future__ import annotations

import io

import anyio
import pytest

from pi_core import (
    AbortSignal,
    Agent,
    AgentEvent,
    AgentListener,
    AssistantMessage,
    Context,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_core.cli._demo import DemoModel, demo_reply
from pi_core.cli._render import JsonRenderer, LiveRenderer, Style, use_color
from pi_core.cli._run import InterruptWatcher
from pi_core.cli._tools import make_demo_tools
from pi_core.testing import check_event_grammar, check_transcript


def _reply(*messages: UserMessage | AssistantMessage | ToolResultMessage) -> AssistantMessage:
    model = DemoModel().model
    return demo_reply(Context(messages=list(messages)), StreamOptions(), 1, model)


def _calls(message: AssistantMessage) -> dict[str, dict[str, object]]:
    return {b.name: b.arguments for b in message.content if isinstance(b, ToolCall)}


def _text(message: AssistantMessage) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


def test_a_prompt_gets_thinking_text_and_parallel_tool_calls() -> None:
    reply = _reply(UserMessage("What is (2 + 3) * 4? Then sleep 0.5 s and read README.md"))
    assert reply.stop_reason == "toolUse"
    assert isinstance(reply.content[0], ThinkingContent)
    calls = _calls(reply)
    assert next(iter(calls)) == "sleep"  # first in source order, last to finish
    assert calls["sleep"] == {"seconds": 0.5}
    assert calls["calculate"] == {"expression": "(2 + 3) * 4"}
    assert calls["read_file"] == {"path": "README.md"}
    assert "now" in calls
    assert "list_dir" not in calls


def test_a_prompt_about_mcp_calls_the_first_offered_tool_of_each_server() -> None:
    schema = {
        "type": "object",
        "properties": {
            "zone": {"type": "string", "description": "A zone (e.g., 'Asia/Tokyo')."},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "count": {"type": ["integer", "null"]},
            "verbose": {"type": "boolean", "default": True},
            "optional": {"type": "string"},
        },
        "required": ["zone", "unit", "count", "verbose"],
    }
    tools = [Tool("b1", "", schema), Tool("a2", "", {"type": "object"}), Tool("c1", "", {})]
    servers = [["gone", "b1", "b2"], ["a1", "a2"], ["c1"], []]
    context = Context(None, [UserMessage("Try the mcp tools")], tools)
    reply = demo_reply(context, StreamOptions(), 1, DemoModel().model, mcp_servers=servers)
    calls = _calls(reply)
    assert calls["b1"] == {"zone": "Asia/Tokyo", "unit": "c", "count": 1, "verbose": True}
    assert calls["a2"] == {} and calls["c1"] == {}
    assert not {"gone", "b2", "a1"} & set(calls)
    plain = demo_reply(
        Context(None, [UserMessage("hello")], tools),
        StreamOptions(),
        1,
        DemoModel().model,
        mcp_servers=servers,
    )
    assert set(_calls(plain)) == {"sleep", "calculate", "now"}


def test_the_users_arithmetic_is_passed_as_written_even_when_it_cannot_be_computed() -> None:
    assert _calls(_reply(UserMessage("What is 1/0?")))["calculate"] == {"expression": "1/0"}


def test_defaults_and_file_words() -> None:
    calls = _calls(_reply(UserMessage("hello, which files are here?")))
    assert calls["sleep"] == {"seconds": 1.0}
    assert calls["calculate"] == {"expression": "6 * 7"}
    assert calls["list_dir"] == {"path": "."}


def _tool_turn() -> tuple[UserMessage, AssistantMessage, ToolResultMessage, ToolResultMessage]:
    prompt = UserMessage("2*3")
    plan = _reply(prompt)
    ok = ToolResultMessage("a", "calculate", [TextContent("2*3 = 6")])
    failed = ToolResultMessage("b", "sleep", [TextContent("seconds too long")], is_error=True)
    return prompt, plan, ok, failed


def test_tool_results_are_reported() -> None:
    text = _text(_reply(*_tool_turn()))
    assert "- 2*3 = 6" in text
    assert "- sleep failed: seconds too long" in text


def test_steering_after_tool_results_is_acknowledged() -> None:
    text = _text(_reply(*_tool_turn(), UserMessage("hurry up")))
    assert text.startswith('You said: "hurry up". Noted.')
    assert "- 2*3 = 6" in text


def test_a_prompt_after_an_aborted_batch_plans_again() -> None:
    prompt, plan, ok, _ = _tool_turn()
    aborted = ToolResultMessage("b", "sleep", [TextContent("Operation aborted")], is_error=True)
    assert "calculate" in _calls(_reply(prompt, plan, ok, aborted, UserMessage("again")))


def test_a_second_prompt_plans_again() -> None:
    prompt, plan, ok, failed = _tool_turn()
    answer = _reply(prompt, plan, ok, failed)
    assert _calls(_reply(prompt, plan, ok, failed, answer, UserMessage("1+1")))["calculate"] == {
        "expression": "1+1"
    }


# --- the renderers, on a whole demo run ----------------------------------------------------------


async def _demo_run(listener: AgentListener, prompt: str = "2+2, sleep 0.5 s") -> Agent:
    demo = DemoModel(tokens_per_second=None, seed=1)
    agent = Agent(model=demo.model, stream_fn=demo.stream, tools=make_demo_tools("."))
    events: list[AgentEvent] = []

    def record(event: AgentEvent, signal: AbortSignal) -> None:
        events.append(event)

    agent.subscribe(record)
    agent.subscribe(listener)
    with anyio.fail_after(10):
        await agent.prompt(prompt)
    check_event_grammar(events)
    check_transcript(agent.state.messages)
    return agent


@pytest.mark.anyio
async def test_live_renderer_shows_the_run() -> None:
    out = io.StringIO()
    renderer = LiveRenderer(out, Style(False))
    await _demo_run(renderer)
    text = out.getvalue()
    assert "\x1b[" not in text
    for expected in ("── turn 1", "you: 2+2", "[thinking] ", "→ sleep", "→ calculate", "✓ calculate: 2+2 = 4",
                     "⋯ sleep: 0.25 / 0.5 s", "── turn 2", "done · 2 turns · 3 tool calls"):  # fmt: skip
        assert expected in text
    assert text.index("✓ calculate") < text.index("✓ sleep")
    assert renderer.stats.outcome == "done"
    assert renderer.stats.tokens > 0


@pytest.mark.anyio
async def test_live_renderer_styles_and_json_renderer() -> None:
    out = io.StringIO()
    await _demo_run(LiveRenderer(out, Style(True)))
    assert "\x1b[2m" in out.getvalue()

    lines, notes = io.StringIO(), io.StringIO()
    renderer = JsonRenderer(lines, notes)
    await _demo_run(renderer)
    renderer.note("hello")
    assert notes.getvalue() == "hello\n"
    assert lines.getvalue().startswith('{"type":"agent_start"}\n')


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_color_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(_Terminal())
    assert not use_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(_Terminal())


@pytest.mark.anyio
async def test_the_first_interrupt_stops_the_second_aborts_the_third_quits() -> None:
    demo = DemoModel(tokens_per_second=None)
    agent = Agent(model=demo.model, stream_fn=demo.stream, tools=make_demo_tools("."))
    notes = io.StringIO()
    watcher = InterruptWatcher(agent, LiveRenderer(notes, Style(False)))
    started = anyio.Event()

    def on_event(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "tool_execution_start":
            started.set()

    agent.subscribe(on_event)
    assert watcher.interrupt()  # idle: nothing to abort, so quit
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, "sleep 30 seconds")
            await started.wait()
            assert not watcher.interrupt()  # running: stop after this step
            assert not watcher.interrupt()  # stopping: abort
            assert watcher.interrupt()  # still closing out: quit
    assert agent.state.error_message == "Operation aborted"
    assert "stopping after this step" in notes.getvalue()
    assert "aborting the run" in notes.getvalue()
