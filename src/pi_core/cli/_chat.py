"""``pi-core chat``: an interactive session on one Agent.

A line typed while the agent works steers it (``agent.steer``); a line typed while it is idle is
the next prompt. Ctrl-C stops the running turn after its current step, a second Ctrl-C aborts it
(its close-out is shown); a third, Ctrl-C while idle, or the end of input leaves. The end of input waits for the running turn first, so
``printf 'question\\n' | pi-core chat`` answers the question before it exits.

Every input (a line, the end of input, Ctrl-C, a finished run) arrives on one memory stream and is
handled in order by one task: the session is a small state machine with no locks.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import attrs
from anyio.streams.memory import MemoryObjectSendStream

from .. import (
    Agent,
    AgentMessage,
    AssistantMessage,
    Model,
    RunOutcome,
    RunResult,
    ToolCall,
    UserMessage,
)
from ._auto_compaction import turn_on_compaction
from ._interrupt import EXIT_ABORTED, EXIT_OK, RunInterrupter, open_interrupts
from ._mcp import open_mcp_tools
from ._plain_input import line_reader, terminal_mode_kept
from ._render import JsonRenderer, LiveRenderer
from ._run import make_renderer
from ._session_commands import SessionCommands
from ._setup import AgentSettings, build_agent
from ._terminal_input import available as terminal_input_available
from ._terminal_input import install_note, start_terminal_input, terminal_output

__all__ = ["chat_command"]

_HELP = (
    "Type a message. While the agent works, a line steers it; Ctrl-C stops, twice aborts; "
    "Ctrl-D quits. "
    "/help lists the commands."
)
_PROMPT = "you> "
_COMMANDS = """commands (between turns):
  /help        this list
  /clear       forget the conversation (the transcript and the queues)
  /model [ID]  show the model, or switch to model ID of the same provider
  /save FILE   write the conversation to FILE, a session file of the Pi coding agent
  /load FILE   continue the conversation saved in FILE (replacing this one)
  /compact [INSTRUCTIONS]  summarise the older part of the conversation
  /tree        the branches of the --session file
  /branch ID   continue from entry ID of the --session file (a new branch)"""
_COMMAND_NAMES = tuple(line.split()[0] for line in _COMMANDS.splitlines()[1:])
"""What Tab completes at the start of a line (with the chat extra): the commands of /help."""


@attrs.frozen
class _Line:
    text: str


@attrs.frozen
class _EndOfInput:
    pass


@attrs.frozen
class _Interrupt:
    pass


@attrs.frozen
class _RunDone:
    aborted: bool


_Input = _Line | _EndOfInput | _Interrupt | _RunDone


async def chat_command(
    settings: AgentSettings,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    session: Path | None = None,
    compaction: bool = True,
    context_window: int | None = None,
) -> int:
    """Chat until the input ends (exit 0) or Ctrl-C while idle (exit 130).

    ``stdin`` and ``out`` default to the process's standard input and output. With ``session``,
    the conversation continues the session file there (created if missing) and every message is
    appended to it as it ends. With ``compaction`` the agent compacts by itself when the
    conversation nears the model's context window (``context_window`` replaces the model's).
    """
    stdin = stdin if stdin is not None else sys.stdin
    out = out if out is not None else sys.stdout
    interactive = stdin.isatty()
    async with open_mcp_tools(settings) as mcp_servers:
        agent, description = build_agent(settings, mcp_servers=mcp_servers)
        commands = SessionCommands.start(agent, session)
        line_editor = interactive and stdin is sys.stdin and terminal_input_available()
        with terminal_output() if line_editor else contextlib.nullcontext(out) as out:
            # When the input is a pipe nobody sees it typed, so the renderer shows each prompt.
            renderer = make_renderer(settings, out, echo_prompt=not interactive)
            agent.subscribe(renderer)
            if compaction:
                turn_on_compaction(agent, renderer.note, context_window)
            if isinstance(renderer, LiveRenderer):
                # The summary says the chat is ready for the next line: it waits for the run's end.
                renderer.summary_at_agent_end = False
                renderer.header(description)
                if interactive:
                    renderer.note(_HELP if line_editor else f"{_HELP}\n{install_note()}")
            chat = _ChatSession(agent, renderer, interactive, commands)
            chat.line_editor = line_editor
            try:
                return await chat.run(stdin)
            finally:
                commands.close()


class _ChatSession:
    def __init__(
        self,
        agent: Agent,
        renderer: JsonRenderer | LiveRenderer,
        interactive: bool,
        commands: SessionCommands,
    ) -> None:
        self.agent = agent
        self.commands = commands
        self.renderer = renderer
        self.interactive = interactive
        self.running = False
        self.aborting = False
        """Ctrl-C stopped or aborted the run, which is ending (until its end is handled here)."""
        self.interrupter = RunInterrupter(agent, renderer.note, "turn")
        self.end_of_input = False
        self.exit_code: int | None = None
        self.next_prompts: list[str] = []
        self.line_editor = False
        """Whether the input is prompt_toolkit's line editor (a terminal with the extra)."""

    async def run(self, stdin: TextIO) -> int:
        send, receive = anyio.create_memory_object_stream[_Input](math.inf)
        with terminal_mode_kept(stdin):
            async with send, receive, anyio.create_task_group() as tg:
                await tg.start(self._watch_interrupts, send)
                stop_line_editor = None
                if self.line_editor:
                    stop_line_editor = self._start_line_editor(send)
                else:
                    _start_reader(stdin, send, self._prompt_text)
                self._show_prompt()
                try:
                    async for item in receive:
                        self._handle(item, tg, send)
                        if self.exit_code is not None:
                            break
                finally:
                    if stop_line_editor is not None:
                        stop_line_editor()
                tg.cancel_scope.cancel()
        return self.exit_code if self.exit_code is not None else EXIT_OK

    def _handle(
        self, item: _Input, tg: anyio.abc.TaskGroup, send: MemoryObjectSendStream[_Input]
    ) -> None:
        if isinstance(item, _Line):
            self._on_line(item.text.strip(), tg, send)
        elif isinstance(item, _EndOfInput):
            self.end_of_input = True
            if self.interactive and not self.line_editor:
                self.renderer.note("")  # Ctrl-D leaves the cursor after the prompt
            if not self.running:
                self.exit_code = EXIT_OK
        elif isinstance(item, _Interrupt):
            self._on_interrupt()
        else:
            self._on_run_done(item.aborted, tg, send)

    def _on_line(
        self, text: str, tg: anyio.abc.TaskGroup, send: MemoryObjectSendStream[_Input]
    ) -> None:
        if not text:
            if not self.running:
                self._show_prompt()
        elif text.startswith("/") and self.running:
            self.renderer.note("commands work between turns; Ctrl-C stops this one")
        elif text.startswith("/compact"):
            instructions = text.partition(" ")[2].strip() or None
            self.renderer.note("compacting the conversation …")
            self._start(lambda: self._compact(instructions), tg, send)
        elif text.startswith("/"):
            self.renderer.note(self._command(text))
            self._show_prompt()
        elif self.running and self.aborting:
            # The turn is ending after Ctrl-C (it may even have ended already, its end not yet
            # handled here): a stopped or aborted run polls no more steering, so the line is
            # the next prompt.
            self.next_prompts.append(text)
        elif self.running:
            self.agent.steer(text)
            self.renderer.note(f"steering queued: {text}")
        else:
            self._start(lambda: self.agent.prompt(text), tg, send)

    def _command(self, text: str) -> str:
        """Carry out a slash command; returns what to tell the user."""
        name, _, argument = text.partition(" ")
        argument = argument.strip()
        if name == "/help":
            return _COMMANDS
        if name == "/clear":
            self.agent.reset()
            return "conversation cleared"
        if name == "/model":
            if argument:
                self.agent.model = attrs.evolve(self.agent.model, id=argument, name=argument)
            return f"model: {model_text(self.agent.model)}"
        if name in ("/save", "/load", "/tree", "/branch"):
            return self.commands.command(name, argument)
        return f"unknown command {name}; /help lists the commands"

    async def _compact(self, instructions: str | None) -> RunOutcome:
        self.renderer.note(await self.commands.compact(instructions))
        return RunOutcome.DONE

    def _on_interrupt(self) -> None:
        if self.running and self.interrupter.interrupt():
            self.aborting = True
        else:
            self.renderer.note("interrupted: quitting")
            self.exit_code = EXIT_ABORTED

    def _on_run_done(
        self, aborted: bool, tg: anyio.abc.TaskGroup, send: MemoryObjectSendStream[_Input]
    ) -> None:
        self.running = False
        interrupted = aborted or self.aborting
        self.aborting = False
        if isinstance(self.renderer, LiveRenderer):
            self.renderer.summary()
        if self.next_prompts:
            prompts: list[AgentMessage] = [UserMessage(text) for text in self.next_prompts]
            self.next_prompts = []
            self._start(lambda: self.agent.prompt(prompts), tg, send)
        # Steering typed after the run's last poll is still queued: answer it now, unless the
        # user stopped or aborted the run: then it waits for the next prompt (as the Agent
        # keeps it).
        elif self.agent.has_queued_messages() and not interrupted:
            self._start(self.agent.continue_, tg, send)
        elif self.end_of_input:
            self.exit_code = EXIT_OK
        else:
            self._show_prompt()

    def _start(
        self,
        run: Callable[[], Awaitable[RunResult | RunOutcome]],
        tg: anyio.abc.TaskGroup,
        send: MemoryObjectSendStream[_Input],
    ) -> None:
        self.running = True
        tg.start_soon(self._drive, run, send)

    async def _drive(
        self,
        run: Callable[[], Awaitable[RunResult | RunOutcome]],
        send: MemoryObjectSendStream[_Input],
    ) -> None:
        result = await run()
        outcome = result if isinstance(result, RunOutcome) else result.outcome
        send.send_nowait(_RunDone(aborted=outcome is RunOutcome.ABORTED))

    async def _watch_interrupts(
        self,
        send: MemoryObjectSendStream[_Input],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        with open_interrupts() as interrupts:
            task_status.started()
            if interrupts is not None:
                async for _ in interrupts:
                    send.send_nowait(_Interrupt())

    def _show_prompt(self) -> None:
        if self._prompt_text() and isinstance(self.renderer, LiveRenderer):
            self.renderer.prompt(_PROMPT)

    def _prompt_text(self) -> str:
        """The prompt of the plain reader now: ``you>`` while idle (read from its thread)."""
        shown = self.interactive and not self.line_editor and not self.running
        return _PROMPT if shown and isinstance(self.renderer, LiveRenderer) else ""

    def _start_line_editor(self, send: MemoryObjectSendStream[_Input]) -> Callable[[], None]:
        post = _poster(send)
        return start_terminal_input(
            lambda line: post(_Line(line)),
            lambda: post(_Interrupt()),
            lambda: post(_EndOfInput()),
            self._status,
            _COMMAND_NAMES,
        )

    def _status(self) -> str:
        """The status line: what runs, while the agent works (read from the prompt's thread)."""
        if not self.running:
            return ""
        key = "Ctrl-C aborts" if self.interrupter.stopping() else "Ctrl-C stops"
        if self.interrupter.stopping():
            key = f"stopping · {key}"
        pending = self.agent.state.pending_tool_calls
        if not pending:
            return f"waiting for the model · {key}"
        names = [
            block.name
            for message in self.agent.state.messages[-1:]
            if isinstance(message, AssistantMessage)
            for block in message.content
            if isinstance(block, ToolCall) and block.id in pending
        ]
        return f"running {', '.join(names) or len(pending)} · {key}"


def model_text(model: Model) -> str:
    """The model as ``/model`` shows it: its id, then its name, provider and API where each says
    something the ones before it do not (the demo's are all ``pi-demo``)."""
    text = model.id if model.name in ("", model.id) else f"{model.id} ({model.name})"
    shown = {model.id}
    for label, value in (("provider", model.provider), ("api", model.api)):
        if value and value not in shown:
            text += f" · {label} {value}"
            shown.add(value)
    return text


def _poster(send: MemoryObjectSendStream[_Input]) -> Callable[[_Input], bool]:
    """``post(item)`` for another thread: sends ``item``; False once the session has ended."""
    token = anyio.lowlevel.current_token()

    def post(item: _Input) -> bool:
        try:
            anyio.from_thread.run_sync(send.send_nowait, item, token=token)
        except Exception:  # the session has ended: its loop or its stream is closed
            return False
        return True

    return post


def _start_reader(
    stdin: TextIO, send: MemoryObjectSendStream[_Input], prompt: Callable[[], str]
) -> None:
    """Read ``stdin`` line by line in a daemon thread, posting each line to ``send``.

    Not ``anyio.to_thread``: a blocked ``readline`` cannot be interrupted, and asyncio's worker
    threads are joined at exit, so quitting with Ctrl-C would wait for one more line. A daemon
    thread simply dies with the process.
    """
    post = _poster(send)
    read_line = line_reader(stdin, prompt)

    def read() -> None:
        for line in iter(read_line, ""):
            if not post(_Line(line)):
                return
        post(_EndOfInput())

    threading.Thread(target=read, name="pi-core chat input", daemon=True).start()
