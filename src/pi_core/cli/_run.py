"""``pi-core run PROMPT``: one prompt, rendered live; Ctrl-C aborts with a clean close-out."""

from __future__ import annotations

import sys
from typing import TextIO

import anyio
import anyio.abc

from .._agent import Agent
from ._interrupt import EXIT_ABORTED, EXIT_ERROR, EXIT_OK, open_interrupts
from ._mcp import open_mcp_tools
from ._render import JsonRenderer, LiveRenderer, RunStats, Style, use_color
from ._setup import AgentSettings, build_agent

__all__ = ["InterruptWatcher", "exit_code", "make_renderer", "run_command"]


def make_renderer(
    settings: AgentSettings, out: TextIO, *, echo_prompt: bool = True
) -> JsonRenderer | LiveRenderer:
    """The renderer ``settings`` ask for, writing to ``out``."""
    if settings.json:
        return JsonRenderer(out, compact=settings.json_compact)
    return LiveRenderer(out, Style(use_color(out)), echo_prompt=echo_prompt)


def exit_code(stats: RunStats) -> int:
    """0 when the run completed, 1 when an error ended it, 130 when it was aborted."""
    return {"done": EXIT_OK, "error": EXIT_ERROR, "aborted": EXIT_ABORTED}[stats.outcome]


async def run_command(settings: AgentSettings, prompt: str, out: TextIO | None = None) -> int:
    """Run ``prompt`` once and render it; returns the exit status.

    The first Ctrl-C aborts the run (the close-out events are still rendered); a second one
    cancels it outright.
    """
    async with open_mcp_tools(settings) as mcp_tools:
        agent, description = build_agent(settings, extra_tools=mcp_tools)
        renderer = make_renderer(settings, out if out is not None else sys.stdout)
        agent.subscribe(renderer)
        if isinstance(renderer, LiveRenderer):
            renderer.header(description)
        watcher = InterruptWatcher(agent, renderer)
        async with anyio.create_task_group() as tg:
            await tg.start(watcher.watch, tg.cancel_scope)
            await agent.prompt(prompt)
            tg.cancel_scope.cancel()
    return EXIT_ABORTED if watcher.stopped else exit_code(renderer.stats)


class InterruptWatcher:
    """Turns Ctrl-C into ``agent.abort()`` while a run is active; otherwise stops everything."""

    def __init__(self, agent: Agent, renderer: JsonRenderer | LiveRenderer) -> None:
        self.agent = agent
        self.renderer = renderer
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
        """Abort the active run, if it is not aborting yet; returns whether to stop instead."""
        signal = self.agent.signal
        if signal is not None and not signal.aborted:
            self.renderer.note("interrupted: aborting the run (Ctrl-C again to quit at once)")
            self.agent.abort("interrupted")
            return False
        self.renderer.note("interrupted: quitting")
        return True
