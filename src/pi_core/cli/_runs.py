"""``pi-core runs …``: start, steer, watch and manage durable runs from any shell.

Every subcommand is a :class:`~pi_core.durable.DurableRuns` call against ``--db``; none needs the
agents' code. ``events`` (and ``start --follow``) render a run like ``pi-core run`` does, live or
after the fact.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from .._events import AgentEvent, TurnEnd
from .._messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from .._texts import OPERATION_ABORTED
from ..nursery import AbortController
from ._interrupt import EXIT_ABORTED, EXIT_ERROR, EXIT_OK
from ._render import JsonRenderer, LiveRenderer, Style, use_color
from ._run import exit_code
from ._setup import UsageError
from ._worker import add_db_option, import_durable, report_error, require_db

__all__ = ["add_runs_parser", "runs_command"]

_STATES = ("pending", "running", "success", "error", "cancelled")
_STATUS_FIELDS = ("run_id", "agent", "state", "executor_id", "created_at")


def add_runs_parser(commands: Any) -> None:
    runs = commands.add_parser("runs", help="start, steer, watch and manage durable runs")
    verbs = runs.add_subparsers(dest="verb", metavar="VERB", required=True)
    start = _verb(verbs, "start", "start a run of AGENT; prints its run id")
    start.add_argument("agent", metavar="AGENT", help="the agent's name, as defined")
    start.add_argument("prompt", metavar="PROMPT", help="what to ask")
    start.add_argument("--params", metavar="JSON", help="a JSON object for the agent's factory")
    start.add_argument(
        "--run-id", metavar="ID", help="the run's id (starting it twice starts once)"
    )
    start.add_argument("--follow", action="store_true", help="then render its events, as events")
    _add_json(start)
    for name, what in (("steer", "steer"), ("follow-up", "queue a follow-up for")):
        verb = _verb(verbs, name, f"{what} a running run", run_id=True)
        verb.add_argument("text", metavar="TEXT", help="the message")
    _verb(verbs, "abort", "abort a run softly: it closes out and succeeds", run_id=True)
    _verb(verbs, "cancel", "stop a run at its next step (resume continues it)", run_id=True)
    _verb(verbs, "resume", "continue a cancelled or orphaned run", run_id=True)
    events = _verb(verbs, "events", "render a run's events, live, until it ends", run_id=True)
    events.add_argument("--after", type=int, default=-1, metavar="OFFSET", help="skip up to here")
    _add_json(events)
    _add_json(_verb(verbs, "status", "show a run's state", run_id=True))
    _add_json(_verb(verbs, "result", "wait for a run's end; print its new messages", run_id=True))
    listing = _verb(verbs, "list", "list the runs")
    listing.add_argument("--state", choices=_STATES, help="only the runs in this state")
    listing.add_argument("--agent", metavar="AGENT", help="only the runs of this agent")
    _add_json(listing)
    recover = _verb(verbs, "recover", "take over the unfinished runs of a dead worker")
    recover.add_argument("executor", metavar="EXECUTOR", help="the dead worker's executor id")


def _verb(verbs: Any, name: str, help_text: str, *, run_id: bool = False) -> Any:
    verb = verbs.add_parser(name, help=help_text, description=help_text)
    if run_id:
        verb.add_argument("run_id", metavar="ID", help="the run's id")
    add_db_option(verb)
    return verb


def _add_json(verb: argparse.ArgumentParser) -> None:
    verb.add_argument("--json", action="store_true", help="print JSON, one object per line")


async def runs_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one ``pi-core runs`` verb; returns the exit status."""
    database_url = require_db(args)
    _check(args)
    durable = import_durable()
    try:
        async with durable.DurableRuns(database_url) as runs:
            return await _VERBS[args.verb](runs, args, out if out is not None else sys.stdout)
    except durable.DurableError as exc:
        return report_error(exc)


def _check(args: argparse.Namespace) -> None:
    """The usage errors that need no database, found before connecting to one."""
    if args.verb == "start":
        if not args.prompt.strip():
            raise UsageError("the prompt is empty")
        args.params = _params(args.params)


# --- the verbs ------------------------------------------------------------------------------------


async def _start(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    run_id = await runs.start(args.agent, args.prompt, params=args.params, run_id=args.run_id)
    if not args.follow:
        print(json.dumps({"run_id": run_id}) if args.json else run_id, file=out)
        return EXIT_OK
    print(f"run {run_id}", file=sys.stderr)
    return await _render_events(runs, run_id, args, out)


def _params(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--params is not JSON: {exc}") from None
    if not isinstance(params, dict):
        raise UsageError("--params must be a JSON object")
    return params


def _simple(method: str, done: str) -> Callable[[Any, argparse.Namespace, TextIO], Awaitable[int]]:
    """A verb that calls ``runs.<method>(run_id[, text])`` and confirms on stderr."""

    async def verb(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
        extra = (args.text,) if hasattr(args, "text") else ()
        await getattr(runs, method)(args.run_id, *extra)
        print(f"run {args.run_id}: {done}", file=sys.stderr)
        return EXIT_OK

    return verb


async def _events(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    return await _render_events(runs, args.run_id, args, out)


async def _status(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    status = await runs.status(args.run_id)
    if args.json:
        print(json.dumps(_status_dict(status), default=str), file=out)
    else:
        for field in _STATUS_FIELDS:
            print(f"{field}: {getattr(status, field)}", file=out)
    return EXIT_OK


async def _result(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    from ..serialization import dumps

    for message in await runs.result(args.run_id):
        print(dumps(message) if args.json else _message_line(message), file=out)
    return EXIT_OK


async def _list(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    for status in await runs.list_runs(state=args.state, agent=args.agent):
        row = _status_dict(status)
        if args.json:
            print(json.dumps(row, default=str), file=out)
        else:
            print("  ".join(str(row[field]) for field in _STATUS_FIELDS), file=out)
    return EXIT_OK


async def _recover(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    moved = await runs.recover(args.executor)
    for run_id in moved:
        print(run_id, file=out)
    print(f"recovered {len(moved)} run(s) of {args.executor}", file=sys.stderr)
    return EXIT_OK


_VERBS: dict[str, Callable[[Any, argparse.Namespace, TextIO], Awaitable[int]]] = {
    "start": _start,
    "steer": _simple("steer", "steered"),
    "follow-up": _simple("follow_up", "follow-up queued"),
    "abort": _simple("abort", "aborting"),
    "cancel": _simple("cancel", "cancelled"),
    "resume": _simple("resume", "resumed"),
    "events": _events,
    "status": _status,
    "result": _result,
    "list": _list,
    "recover": _recover,
}


# --- rendering ------------------------------------------------------------------------------------


async def _render_events(runs: Any, run_id: str, args: argparse.Namespace, out: TextIO) -> int:
    """Render the run's events from ``--after`` to its end; the exit status tells how it ended."""
    renderer = JsonRenderer(out) if args.json else LiveRenderer(out, Style(use_color(out)))
    ended = False
    async for _offset, event in runs.events(run_id, after=getattr(args, "after", -1)):
        renderer(event, _signal_for(event))
        ended = ended or event.type == "agent_end"
    if ended:
        return exit_code(renderer.stats)
    state = (await runs.status(run_id)).state
    renderer.note(f"run {run_id} ended without finishing: {state}")
    return EXIT_ABORTED if state == "cancelled" else EXIT_ERROR


def _signal_for(event: AgentEvent) -> Any:
    """The abort signal the run had at ``event``, as far as its events tell.

    The renderers count a turn whose tool calls an abort cut short as aborted; the recorded
    events carry no signal, but such a turn's results say "Operation aborted".
    """
    controller = AbortController()
    if isinstance(event, TurnEnd) and any(_was_aborted(result) for result in event.tool_results):
        controller.abort()
    return controller.signal


def _was_aborted(result: ToolResultMessage) -> bool:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    return result.is_error and texts == [OPERATION_ABORTED]


def _status_dict(status: Any) -> dict[str, Any]:
    return {field: getattr(status, field) for field in _STATUS_FIELDS}


def _message_line(message: Any) -> str:
    """One message as a line of text: who said it, and what."""
    content = message.content
    if isinstance(content, str):
        return f"{message.role}: {content}"
    texts = [block.text for block in content if isinstance(block, TextContent)]
    if isinstance(message, AssistantMessage):
        texts += [f"→ {block.name}" for block in content if isinstance(block, ToolCall)]
    elif isinstance(message, ToolResultMessage):
        return f"{message.tool_name}: " + " ".join(texts)
    return f"{message.role}: " + " ".join(texts)
