"""The built-in demo model: a :class:`FauxProvider` whose replies are planned from the context.

It needs no network and no key, and shows the runtime at work: a first turn that thinks, talks and
calls several tools at once (a slow ``sleep`` that streams progress first in source order, so the
results arrive out of order), then a second turn that reads the tool results back. A user message
injected after the tool results (steering) is acknowledged in that second turn. A prompt that
mentions ``mcp`` or ``tools`` also calls the first tool of each MCP server the model was told
about, with arguments made up from the tool's schema. A prompt that asks to ``research`` a list
of tasks (``research the time and 17 * 23``) hands each task to a ``research`` sub-agent, all
in parallel, when the context offers that tool. Asked for a typed answer (the context offers
the ``final_result`` tool), the report of the tool results calls it, with arguments made up from
its schema.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from .. import (
    AssistantMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    StreamResult,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    register_provider,
)
from ..lowlevel import OPERATION_ABORTED, OUTPUT_TOOL, clip, provider_transcript
from ..providers.faux import (
    FauxProvider,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from ._demo_args import sample_arguments

__all__ = ["DEMO_API", "DEMO_MODEL_ID", "DEMO_TOKENS_PER_SECOND", "DemoModel", "demo_reply"]

DEMO_API = "pi-demo"
DEMO_MODEL_ID = "pi-demo"
DEMO_TOKENS_PER_SECOND = 150.0
"""Fast enough to finish in a couple of seconds, slow enough to watch the text stream."""

_READ_CHARS = 4000
"""The planner reads this much of a message: its regular expressions and the calculator must not
take a server's event loop for seconds on a huge prompt."""
_DEFAULT_EXPRESSION = "6 * 7"
_DEFAULT_SLEEP = 1.0
_FILE_WORDS = re.compile(r"\b(files?|dir|directory|folder|ls)\b", re.IGNORECASE)
_SECONDS = re.compile(
    r"(?:\b(?:sleep|wait)\s+(\d+(?:\.\d+)?))|(?:\b(\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds?)\b)",
    re.IGNORECASE,
)
_MCP_WORDS = re.compile(r"\b(mcp|tools)\b", re.IGNORECASE)
_RESEARCH = re.compile(r"\bresearch\b\s*(.*)", re.IGNORECASE | re.DOTALL)
_TASK_SEPARATOR = re.compile(r"\s*(?:,|;|\band\b)\s*", re.IGNORECASE)
_MAX_RESEARCHERS = 3
_ARITHMETIC = re.compile(r"[-+(\d.][-+*/%().\d\s]*")
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z]\w{0,7})(?![\w/])")


class DemoModel:
    """The demo model; :attr:`stream` is its stream function, :attr:`model` its :class:`Model`.

    Args:
        tokens_per_second: pacing of the streamed reply; ``None`` streams as fast as possible.
        seed: seeds the chunk sizes, for reproducible output.
        mcp_servers: the tool names of each MCP server, in the server's order: a prompt that
            mentions ``mcp`` or ``tools`` calls the first of each.
    """

    def __init__(
        self,
        *,
        tokens_per_second: float | None = DEMO_TOKENS_PER_SECOND,
        seed: int | None = None,
        mcp_servers: Sequence[Sequence[str]] = (),
    ) -> None:
        servers = tuple(tuple(names) for names in mcp_servers if names)
        self._reply = functools.partial(demo_reply, mcp_servers=servers)
        self._faux = FauxProvider(
            models=[{"id": DEMO_MODEL_ID, "name": "pi-core demo model", "reasoning": True}],
            api=DEMO_API,
            provider="pi-demo",
            tokens_per_second=tokens_per_second,
            token_size=(1, 2),
            seed=seed,
        )

    @property
    def model(self) -> Model:
        """The demo's only model."""
        return self._faux.models[0]

    def stream(self, model: Model, context: Context, options: StreamOptions) -> StreamResult:
        """Answer any number of calls: each one queues a freshly planned reply first."""
        self._faux.append_responses([self._reply])
        return self._faux.stream(model, context, options)

    def register(self) -> None:
        """Serve api ``"pi-demo"`` in :func:`pi_core.stream_simple` (for the proxy server)."""
        register_provider(DEMO_API, self.stream)


def demo_reply(
    context: Context,
    options: StreamOptions,
    call_count: int,
    model: Model,
    *,
    mcp_servers: Sequence[Sequence[str]] = (),
) -> AssistantMessage:
    """Plan the next reply from the end of the transcript (a faux response factory);
    ``mcp_servers`` as for :class:`DemoModel`."""
    transcript = provider_transcript(context)  # the declared tools; no system messages
    messages, tools = transcript.messages, transcript.tools
    last = messages[-1] if messages else None
    output_tool = next((tool for tool in tools if tool.name == OUTPUT_TOOL), None)
    if isinstance(last, ToolResultMessage):
        if output_tool is not None and last.tool_name == OUTPUT_TOOL:
            return faux_assistant_message("Done.")  # the run ends before this is asked for
        return _report(_latest_results(messages), steering=[], output_tool=output_tool)
    if isinstance(last, UserMessage):
        steering = _trailing_user_texts(messages)
        results = _latest_results(messages)
        # User messages right after tool results steer the run, unless that run was aborted:
        # then they start a new request.
        if results and not any(_result_text(r) == OPERATION_ABORTED for r in results):
            return _report(results, steering, output_tool)
        prompt = _user_text(last)
        if _RESEARCH.search(prompt) and any(tool.name == "research" for tool in tools):
            return _delegate(prompt)
        return _plan(prompt, _mcp_calls(prompt, tools, mcp_servers))
    return faux_assistant_message("Nothing to add: send me a message.")


# --- the first turn: plan tool calls ------------------------------------------------------------


def _plan(prompt: str, mcp_calls: Sequence[ToolCall]) -> AssistantMessage:
    calls = [
        faux_tool_call("sleep", {"seconds": _seconds(prompt)}),
        faux_tool_call("calculate", {"expression": _expression(prompt)}),
        faux_tool_call("now", {}),
    ]
    if _FILE_WORDS.search(prompt):
        calls.append(faux_tool_call("list_dir", {"path": "."}))
    calls.extend(faux_tool_call("read_file", {"path": path}) for path in _paths(prompt))
    calls.extend(mcp_calls)
    names = ", ".join(call.name for call in calls)
    thinking = (
        f'The user wrote: "{_shorten(prompt, 80)}". I can call {names} at once. sleep reports '
        "progress and is the slowest, so the results will arrive out of order."
    )
    text = f"I'll run {len(calls)} tools in parallel."
    return faux_assistant_message(
        [faux_thinking(thinking), faux_text(text), *calls], stop_reason="toolUse"
    )


def _delegate(prompt: str) -> AssistantMessage:
    """A prompt that asks for research: one ``research`` call per task it lists, in parallel."""
    match = _RESEARCH.search(prompt)
    assert match is not None
    tasks = [task for task in _TASK_SEPARATOR.split(match.group(1)) if task.strip()]
    tasks = tasks[:_MAX_RESEARCHERS] or ["what time it is"]
    calls = [faux_tool_call("research", {"task": task}) for task in tasks]
    thinking = f"I'll hand {len(calls)} tasks to research helpers; they work in parallel."
    text = f"Delegating {len(calls)} tasks."
    return faux_assistant_message(
        [faux_thinking(thinking), faux_text(text), *calls], stop_reason="toolUse"
    )


def _mcp_calls(
    prompt: str, tools: Sequence[Tool], mcp_servers: Sequence[Sequence[str]]
) -> list[ToolCall]:
    """When the prompt asks for them, a call of the first tool of each MCP server that the
    context offers."""
    if not _MCP_WORDS.search(prompt):
        return []
    offered = {tool.name: tool for tool in tools}
    calls: list[ToolCall] = []
    for names in mcp_servers:
        first = next((offered[name] for name in names if name in offered), None)
        if first is not None:
            calls.append(faux_tool_call(first.name, sample_arguments(first.parameters)))
    return calls


def _seconds(prompt: str) -> float:
    match = _SECONDS.search(prompt)
    if match is None:
        return _DEFAULT_SLEEP
    return float(match.group(1) or match.group(2))


def _expression(prompt: str) -> str:
    """The longest arithmetic in the prompt, as the user wrote it (``1/0`` too: the tool's
    error is worth seeing), else a default."""
    candidates = [m.group().strip() for m in _ARITHMETIC.finditer(prompt)]
    arithmetic = [c for c in candidates if re.search(r"\d\s*[-+*/%]", c)]
    return max(arithmetic, key=len, default=_DEFAULT_EXPRESSION)


def _paths(prompt: str) -> list[str]:
    return list(dict.fromkeys(_PATH.findall(prompt)))[:2]


# --- the next turn: report the results ----------------------------------------------------------


def _report(
    results: Sequence[ToolResultMessage], steering: Sequence[str], output_tool: Tool | None = None
) -> AssistantMessage:
    lines = [f'You said: "{_shorten(text, 80)}". Noted.' for text in steering]
    lines.append("Here is what the tools reported:")
    lines.extend(f"- {_describe(result)}" for result in results)
    thinking = f"{len(results)} tool results are in; time to report them."
    blocks: list[ThinkingContent | TextContent | ToolCall] = [
        faux_thinking(thinking),
        faux_text("\n".join(lines)),
    ]
    if output_tool is None:
        return faux_assistant_message(blocks)
    blocks.append(faux_tool_call(OUTPUT_TOOL, sample_arguments(output_tool.parameters)))
    return faux_assistant_message(blocks, stop_reason="toolUse")


def _describe(result: ToolResultMessage) -> str:
    text = _result_text(result)
    first = _shorten(text.splitlines()[0] if text else "", 100)
    if result.is_error:
        return f"{result.tool_name} failed: {first}"
    if result.tool_name == "now":
        return f"it is {first}"
    if result.tool_name == "list_dir":
        return f"the directory has {len(text.splitlines())} entries"
    if result.tool_name == "read_file":
        return f"the file starts with: {first}"
    if result.tool_name in ("calculate", "sleep"):
        return first
    return f"{result.tool_name} answered: {_shorten(text, 100)}"  # an MCP server's tool


def _latest_results(messages: Sequence[Message]) -> list[ToolResultMessage]:
    """The tool results of the last batch (skipping messages injected after them)."""
    results: list[ToolResultMessage] = []
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            results.append(message)
        elif results or not isinstance(message, UserMessage):
            break
    return results[::-1]


def _trailing_user_texts(messages: Sequence[Message]) -> list[str]:
    texts: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, UserMessage):
            break
        texts.append(_user_text(message))
    return texts[::-1]


def _user_text(message: UserMessage) -> str:
    """The start of the message's text: what the planner reads."""
    if isinstance(message.content, str):
        return message.content[:_READ_CHARS]
    texts = (block.text for block in message.content if isinstance(block, TextContent))
    return " ".join(texts)[:_READ_CHARS]


def _result_text(result: ToolResultMessage) -> str:
    texts = (block.text for block in result.content if isinstance(block, TextContent))
    return "\n".join(texts)[:_READ_CHARS]


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return clip(text, limit)
