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
from datetime import datetime, timezone
from typing import Any, TextIO

from .. import AgentEvent, AssistantMessage, TextContent, ToolCall, ToolResultMessage, TurnEnd
from ..lowlevel import OPERATION_ABORTED
from ..nursery import AbortController
from ._interrupt import EXIT_ABORTED, EXIT_ERROR, EXIT_OK
from ._render import JsonRenderer, LiveRenderer, Style, use_color
from ._run import exit_code
from ._setup import UsageError
from ._worker import add_db_option, import_durable, report_error, require_db

__all__ = ["add_runs_parser", "runs_command"]

_STATES = ("pending", "running", "waiting", "success", "error", "cancelled")
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
    stop = _verb(verbs, "stop", "stop a run after its current step", run_id=True)
    stop.add_argument(
        "--grace", type=float, metavar="SECONDS", help="then abort it if still running after this"
    )
    _verb(verbs, "abort", "abort a run softly: it closes out and succeeds", run_id=True)
    _add_json(
        _verb(verbs, "pending", "list a run's tool calls that wait for a decision", run_id=True)
    )
    approve = _verb(verbs, "approve", "let a waiting tool call run", run_id=True)
    approve.add_argument("call_id", metavar="CALL_ID", help="the tool call's id")
    deny = _verb(verbs, "deny", "answer a waiting tool call denied, unrun", run_id=True)
    deny.add_argument("call_id", metavar="CALL_ID", help="the tool call's id")
    deny.add_argument("--reason", metavar="TEXT", help="why: the model reads it")
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
    verb.add_argument(
        "--unreachable-after",
        type=float,
        metavar="SECONDS",
        help="retry a database that is away for this long before giving up (default: 60)",
    )
    return verb


def _add_json(verb: argparse.ArgumentParser) -> None:
    verb.add_argument("--json", action="store_true", help="print JSON, one object per line")


async def runs_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one ``pi-core runs`` verb; returns the exit status."""
    database_url = require_db(args)
    _check(args)
    durable = import_durable()
    try:
        async with durable.DurableRuns(database_url, **_bounds(args)) as runs:
            return await _VERBS[args.verb](runs, args, out if out is not None else sys.stdout)
    except durable.DurableError as exc:
        return report_error(exc)


def _bounds(args: argparse.Namespace) -> dict[str, Any]:
    """The bounds given on the command line; the others keep DurableRuns's defaults."""
    given = args.unreachable_after
    return {} if given is None else {"unreachable_after": given}


def _check(args: argparse.Namespace) -> None:
    """The usage errors that need no database, found before connecting to one."""
    if args.unreachable_after is not None and not args.unreachable_after > 0:
        raise UsageError("--unreachable-after must be positive")
    if args.verb == "stop" and args.grace is not None and not args.grace >= 0:
        raise UsageError("--grace must be a number of seconds >= 0")
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


async def _pending(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    for call in await runs.pending(args.run_id):
        fields = {"tool_call_id": call.tool_call_id, "tool_name": call.tool_name}
        fields.update(args=call.args, reason=call.reason)
        if args.json:
            print(json.dumps(fields, default=str), file=out)
        else:
            why = f"  ({call.reason})" if call.reason else ""
            arguments = json.dumps(call.args, default=str)
            print(f"{call.tool_call_id}  {call.tool_name} {arguments}{why}", file=out)
    return EXIT_OK


async def _stop(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    await runs.stop(args.run_id, grace=args.grace)
    print(f"run {args.run_id}: stopping", file=sys.stderr)
    return EXIT_OK


async def _approve(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    await runs.approve(args.run_id, args.call_id)
    print(f"run {args.run_id}: {args.call_id} approved", file=sys.stderr)
    return EXIT_OK


async def _deny(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    await runs.deny(args.run_id, args.call_id, args.reason)
    print(f"run {args.run_id}: {args.call_id} denied", file=sys.stderr)
    return EXIT_OK


async def _events(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    return await _render_events(runs, args.run_id, args, out)


async def _status(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    status = await runs.status(args.run_id)
    if args.json:
        print(json.dumps(_status_dict(status), default=str), file=out)
    else:
        for field, text in zip(_STATUS_FIELDS, _status_texts(status), strict=True):
            print(f"{field}: {text}", file=out)
    return EXIT_OK


async def _result(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    from ..serialization import dumps

    for message in await runs.result(args.run_id):
        print(dumps(message) if args.json else _message_line(message), file=out)
    return EXIT_OK


async def _list(runs: Any, args: argparse.Namespace, out: TextIO) -> int:
    found = await runs.list_runs(state=args.state, agent=args.agent)
    if args.json:
        for status in found:
            print(json.dumps(_status_dict(status), default=str), file=out)
        return EXIT_OK
    rows = [list(_STATUS_FIELDS), *(_status_texts(status) for status in found)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_STATUS_FIELDS))]
    for row in rows:
        cells = (text.ljust(width) for text, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip(), file=out)
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
    "stop": _stop,
    "pending": _pending,
    "approve": _approve,
    "deny": _deny,
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
    recorded = _RecordedTime()
    if args.json:
        renderer: JsonRenderer | LiveRenderer = JsonRenderer(out)
    else:
        renderer = LiveRenderer(out, Style(use_color(out)), clock=recorded)
    ended = False
    async for _offset, at_ms, event in runs.timed_events(run_id, after=getattr(args, "after", -1)):
        recorded.at(at_ms)
        renderer(event, _signal_for(event))
        ended = ended or event.type == "agent_end"
    if ended:
        return exit_code(renderer.stats.outcome)
    state = (await runs.status(run_id)).state
    renderer.note(f"run {run_id} ended without finishing: {state}")
    return EXIT_ABORTED if state == "cancelled" else EXIT_ERROR


class _RecordedTime:
    """The renderer's clock: the run's recorded time of the event being rendered, in seconds.

    Events are read long after they happened (or replayed at once): their arrival times say
    nothing about how long the run's steps took, their recorded times do.
    """

    def __init__(self) -> None:
        self._seconds = 0.0

    def at(self, at_ms: int | None) -> None:
        if at_ms is not None:  # an event written without a time: keep the last one
            self._seconds = at_ms / 1000

    def __call__(self) -> float:
        return self._seconds


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
    """The status for ``--json``: ``created_at`` in milliseconds since the epoch, as recorded."""
    return {field: getattr(status, field) for field in _STATUS_FIELDS}


def _status_texts(status: Any) -> list[str]:
    """The status for people: ``created_at`` as an ISO time (UTC), a missing executor as ``-``."""
    created = datetime.fromtimestamp(status.created_at / 1000, tz=timezone.utc)
    return [
        status.run_id,
        status.agent,
        status.state,
        status.executor_id or "-",
        created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    ]


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
