"""Failures are visible: the ``pi_core`` logger, errors that say what to do, a run's outcome."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_core import (
    AbortSignal,
    Agent,
    AgentEvent,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    RunError,
    RunOutcome,
    RunResult,
    StreamOptions,
    TextContent,
    ToolResultMessage,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from support import BlockingStream, faux, make_tool

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parent.parent / "src"


async def failing_execute(
    tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any
) -> str:
    return {"a": "1"}["zzz"]


def agent_calling(provider: FauxProvider, tool_name: str, **options: Any) -> Agent:
    provider.set_responses(
        [
            faux_assistant_message([faux_tool_call(tool_name, {}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message("Sorry."),
        ]
    )
    return Agent(model=provider.get_model(), stream_fn=provider.stream, **options)


def pi_core_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "pi_core"]


# --- the logger -----------------------------------------------------------------------------


async def test_a_tool_that_raises_is_logged_at_warning_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = agent_calling(faux(), "lookup", tools=[make_tool("lookup", failing_execute)])
    with caplog.at_level(logging.DEBUG, logger="pi_core"):
        result = await agent.prompt("Look it up.")
    [record] = pi_core_records(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "Tool lookup raised KeyError (call c1); the model gets it as the call's error result"
    )
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert "failing_execute" in caplog.text  # the traceback, down to the tool's own frame
    tool_result = result.messages[2]
    assert isinstance(tool_result, ToolResultMessage)
    assert tool_result.content == [TextContent("'zzz'")]
    assert result.ok and result.text == "Sorry."


async def test_after_tool_call_raising_is_logged_as_the_hook(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def after(context: Any, signal: AbortSignal) -> None:
        raise RuntimeError("hook bug")

    agent = agent_calling(faux(), "lookup", tools=[make_tool("lookup")], after_tool_call=after)
    with caplog.at_level(logging.DEBUG, logger="pi_core"):
        await agent.prompt("Look it up.")
    [record] = pi_core_records(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(
        "after_tool_call raised RuntimeError for tool lookup (call c1)"
    )


async def test_invalid_arguments_are_the_models_mistake_and_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    agent = agent_calling(faux(), "lookup", tools=[make_tool("lookup", parameters=schema)])
    with caplog.at_level(logging.DEBUG, logger="pi_core"):
        result = await agent.prompt("Look it up.")
    assert pi_core_records(caplog) == []
    tool_result = result.messages[2]
    assert isinstance(tool_result, ToolResultMessage) and tool_result.is_error


async def test_a_missing_provider_is_logged_at_error_and_says_what_to_do(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = Agent(model=Model("llama3", api="ollama-chat", provider="ollama"))
    with caplog.at_level(logging.DEBUG, logger="pi_core"):
        result = await agent.prompt("Hi")
    hint = (
        "No API provider registered for api: ollama-chat (register a stream function with "
        "pi_core.register_provider(api, stream_fn), or give the Agent a stream_fn; pi_core's own "
        "providers serve anthropic-messages, google-generative-ai, openai-completions, "
        "openai-responses)"
    )
    assert result.error_message == hint == agent.state.error_message
    [record] = pi_core_records(caplog)
    assert record.levelno == logging.ERROR
    assert record.getMessage() == f"Model call to ollama/llama3 failed: {hint}"


async def test_a_stream_function_that_raises_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        raise ConnectionError("the server is down")

    agent = Agent(model=faux().get_model(), stream_fn=broken)
    with caplog.at_level(logging.DEBUG, logger="pi_core"):
        result = await agent.prompt("Hi")
    [record] = pi_core_records(caplog)
    assert record.levelno == logging.ERROR
    assert record.getMessage().endswith("failed: the server is down")
    assert record.exc_info is not None and record.exc_info[0] is ConnectionError
    assert result.error_message == "the server is down"


async def test_a_listener_that_raises_fails_the_run_at_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("Hello.")])
    agent = Agent(model=provider.get_model(), stream_fn=provider.stream)

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "turn_start":
            raise ValueError("listener bug")

    agent.subscribe(listener)
    with caplog.at_level(logging.DEBUG, logger="pi_core"):
        result = await agent.prompt("Hi")
    [record] = pi_core_records(caplog)
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "Agent run failed with ValueError; it ends with an error message"
    assert record.exc_info is not None and record.exc_info[0] is ValueError
    assert not result.ok and result.error_message == "listener bug"
    assert [message.role for message in result.messages] == ["assistant"]


async def test_a_run_that_succeeds_or_is_aborted_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("Hello.")])
    agent = Agent(model=provider.get_model(), stream_fn=provider.stream)
    stream = BlockingStream()
    blocked = Agent(model=provider.get_model(), stream_fn=stream)
    with caplog.at_level(logging.DEBUG, logger="pi_core"):
        await agent.prompt("Hi")
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(blocked.prompt, "Hi")
                await stream.started.wait()
                blocked.abort()
    assert blocked.state.error_message == "Request was aborted"
    assert pi_core_records(caplog) == []


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PYTHONPATH": str(SRC), "PATH": ""},
    )


def test_the_library_configures_no_logging() -> None:
    done = run_python(
        "import logging, pi_core, pi_core.providers.openai, pi_core.testing\n"
        "log = logging.getLogger('pi_core')\n"
        "print(log.handlers, log.level, log.propagate, logging.getLogger().handlers)"
    )
    assert done.stdout.strip() == "[] 0 True []"


def test_with_no_configuration_a_failing_tool_still_shows_its_traceback_on_stderr() -> None:
    program = """
import anyio
from pi_core import Agent, tool
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

@tool
async def lookup(key: str) -> str:
    '''Look a key up.'''
    return {"a": "1"}[key]

async def main() -> None:
    model = FauxProvider()
    call = faux_tool_call("lookup", {"key": "zzz"})
    model.set_responses(
        [faux_assistant_message([call], stop_reason="toolUse"), faux_assistant_message("ok")]
    )
    agent = Agent(model=model.get_model(), stream_fn=model.stream, tools=[lookup])
    print((await agent.prompt("Look up zzz.")).text)

anyio.run(main)
"""
    done = run_python(program)
    assert done.stdout == "ok\n"
    assert "Tool lookup raised KeyError (call " in done.stderr
    assert "Traceback (most recent call last):" in done.stderr
    assert "KeyError: 'zzz'" in done.stderr


# --- the outcome of a run -------------------------------------------------------------------


async def test_prompt_returns_the_runs_messages_reply_and_text() -> None:
    provider = faux()
    agent = agent_calling(provider, "lookup", tools=[make_tool("lookup")])
    result = await agent.prompt("Look it up.")
    assert isinstance(result, RunResult)
    assert [message.role for message in result.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert list(result.messages) == agent.state.messages[1:]  # after the leading system message
    assert result.reply is agent.state.messages[-1]
    assert result.text == "Sorry."
    assert result.ok and result.error_message is None
    assert result.raise_for_error() is result


async def test_raise_for_error_raises_a_run_error_carrying_the_result() -> None:
    agent = Agent(model=Model("m", api="no-such-api"))
    result = await agent.prompt("Hi")
    with pytest.raises(
        RunError, match=r"^No API provider registered for api: no-such-api \("
    ) as info:
        result.raise_for_error()
    assert info.value.result is result
    reply = result.reply
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "error"
    assert result.text == ""


async def test_an_abort_during_the_tools_is_an_error_of_the_result() -> None:
    started = anyio.Event()

    async def slow(tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = agent_calling(faux(), "slow", tools=[make_tool("slow", slow)])
    results: list[RunResult] = []

    async def prompt() -> None:
        results.append(await agent.prompt("Go."))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await started.wait()
            agent.abort()
    [result] = results
    assert result.error_message == "Operation aborted"
    assert result.reply is not None and result.reply.stop_reason == "toolUse"
    with pytest.raises(RunError, match=r"^Operation aborted$"):
        result.raise_for_error()


async def test_continue_returns_the_outcome_of_its_run() -> None:
    provider = faux()
    provider.set_responses([faux_assistant_message("Continued.")])
    agent = Agent(model=provider.get_model(), stream_fn=provider.stream)
    agent.state.messages.append(ToolResultMessage("c0", "lookup", [TextContent("42")]))
    result = await agent.continue_()
    assert [message.role for message in result.messages] == ["assistant"]
    assert result.raise_for_error().text == "Continued."


async def test_the_result_says_how_the_run_ended() -> None:
    done = await agent_calling(faux(), "lookup", tools=[make_tool("lookup")]).prompt("Go.")
    failed = await Agent(model=Model("m", api="no-such-api")).prompt("Hi")
    assert (done.outcome, failed.outcome) == (RunOutcome.DONE, RunOutcome.ERROR)
    assert done.outcome == "done" and str(failed.outcome) == "error"
    assert RunResult([], None).outcome is RunOutcome.DONE
    assert RunResult([], "broke").outcome is RunOutcome.ERROR


@pytest.mark.parametrize("where", ["stream", "tools", "listener"])
async def test_an_aborted_run_has_the_aborted_outcome(where: str) -> None:
    started = anyio.Event()

    async def slow(tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    if where == "stream":
        stream = BlockingStream()
        agent = Agent(model=faux().get_model(), stream_fn=stream)
        started = stream.started
    else:
        agent = agent_calling(faux(), "slow", tools=[make_tool("slow", slow)])
    if where == "listener":  # a listener that raises after the abort: the failure is an abort

        def fail_on_tool_end(event: AgentEvent) -> None:
            if event.type == "tool_execution_end":
                raise RuntimeError("listener broke")

        agent.subscribe(fail_on_tool_end)
    results: list[RunResult] = []

    async def prompt() -> None:
        results.append(await agent.prompt("Go."))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await started.wait()
            agent.abort()
    [result] = results
    assert result.outcome is RunOutcome.ABORTED
    assert not result.ok
