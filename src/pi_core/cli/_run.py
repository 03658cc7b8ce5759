"""``pi-core run PROMPT``: one prompt, rendered live; Ctrl-C stops the run, a second one aborts
it with a clean close-out."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.abc

from .. import Agent, OutputSpec, RunOutcome
from ._interrupt import EXIT_ABORTED, EXIT_ERROR, EXIT_OK, RunInterrupter, open_interrupts
from ._mcp import open_mcp_tools
from ._render import JsonRenderer, LiveRenderer, Style, use_color
from ._setup import AgentSettings, UsageError, build_agent

__all__ = [
    "InterruptWatcher",
    "exit_code",
    "make_renderer",
    "read_output_schema",
    "run_command",
]


def make_renderer(
    settings: AgentSettings, out: TextIO, *, echo_prompt: bool = True
) -> JsonRenderer | LiveRenderer:
    """The renderer ``settings`` ask for, writing to ``out``."""
    if settings.json:
        return JsonRenderer(out, compact=settings.json_compact)
    return LiveRenderer(out, Style(use_color(out)), echo_prompt=echo_prompt)


def exit_code(outcome: RunOutcome) -> int:
    """0 when the run completed, 130 when it was aborted, 1 for any other end."""
    if outcome is RunOutcome.DONE:
        return EXIT_OK
    return EXIT_ABORTED if outcome is RunOutcome.ABORTED else EXIT_ERROR


def read_output_schema(path: Path | None) -> dict[str, Any] | None:
    """The JSON Schema of ``--output-schema FILE``, checked to be one (``None`` without it).

    Raises:
        UsageError: the file cannot be read, is not JSON, or is not a JSON Schema object.
    """
    if path is None:
        return None
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"--output-schema {path}: {exc}") from exc
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema {path}: a JSON Schema is an object")
    try:
        OutputSpec.of(schema)
    except TypeError as exc:
        raise UsageError(f"--output-schema {path}: {exc}") from exc
    return schema


async def run_command(
    settings: AgentSettings,
    prompt: str,
    out: TextIO | None = None,
    *,
    output_schema: dict[str, Any] | None = None,
) -> int:
    """Run ``prompt`` once and render it; returns the exit status.

    The first Ctrl-C stops the run after its current step, the second aborts it (the close-out
    events are still rendered); a third one cancels it outright. With ``output_schema`` the run
    asks for an answer of that JSON Schema, which is printed as one line of JSON at the end.
    """
    out = out if out is not None else sys.stdout
    async with open_mcp_tools(settings) as mcp_servers:
        agent, description = build_agent(settings, mcp_servers=mcp_servers)
        renderer = make_renderer(settings, out)
        agent.subscribe(renderer)
        if isinstance(renderer, LiveRenderer):
            renderer.header(description)
        watcher = InterruptWatcher(agent, renderer)
        async with anyio.create_task_group() as tg:
            await tg.start(watcher.watch, tg.cancel_scope)
            result = await agent.prompt(prompt, output_type=output_schema)
            tg.cancel_scope.cancel()
    if output_schema is not None and result.ok and result.output is not None:
        out.write(json.dumps(result.output, ensure_ascii=False) + "\n")
        out.flush()
    return EXIT_ABORTED if watcher.stopped else exit_code(result.outcome)


class InterruptWatcher:
    """Turns Ctrl-C into ``agent.stop()``, then ``agent.abort()``, while a run is active;
    otherwise stops everything."""

    def __init__(self, agent: Agent, renderer: JsonRenderer | LiveRenderer) -> None:
        self.agent = agent
        self.renderer = renderer
        self.interrupter = RunInterrupter(agent, renderer.note, "run")
        self.stopped = False
        """True once a Ctrl-C has cancelled ``scope`` (the second one, or one while idle)."""

    async def watch(
        self,
        scope: anyio.CancelScope,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Handle Ctrl-C until cancelled; reports ``started`` once the handler is installed."""
        with open_interrupts() as interrupts:
            task_status.started()
            if interrupts is None:
                return
            async for _ in interrupts:
                if self.interrupt():
                    self.stopped = True
                    scope.cancel()
                    return

    def interrupt(self) -> bool:
        """Stop or abort the active run, if it is not aborting yet; returns whether to quit
        instead."""
        if self.interrupter.interrupt():
            return False
        self.renderer.note("interrupted: quitting")
        return True
