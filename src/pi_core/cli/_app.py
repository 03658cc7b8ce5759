"""The ``pi-core`` command line: the parser, and ``main`` dispatching to the commands."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import io
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, get_args

import anyio

from .. import ThinkingLevel
from ..lowlevel import install_hint, installed_version
from ..nursery import ConcurrentTaskError
from ._chat import chat_command
from ._interrupt import EXIT_ABORTED, EXIT_ERROR, EXIT_USAGE
from ._run import read_output_schema, run_command
from ._runs import add_runs_parser, runs_command
from ._serve import DEFAULT_BACKLOG, DEFAULT_HOST, DEFAULT_PORT, proxy_token, serve_proxy
from ._serve_ui import add_serve_ui_parser, serve_ui_command
from ._setup import DEFAULT_PROXY_TOKEN_ENV, PROVIDERS, AgentSettings, UsageError
from ._worker import add_worker_parser, worker_command

__all__ = ["build_parser", "main"]

_T = TypeVar("_T")

_DESCRIPTION = """\
pi_core's agent runtime at work. Without a provider it uses a built-in demo model (no network,
no key) that calls tools in parallel, streams progress and answers in a follow-up turn."""

_EPILOG = """\
examples:
  pi-core run "What is 2 + 3 * 4?"
  pi-core run --json "list the files here"
  pi-core run --output-schema invoice.json "Read the invoice in invoice.txt"
  pi-core run --provider openai --model gpt-4o-mini "What time is it?"
  pi-core run --model anthropic/claude-sonnet-4-5 --thinking low "What time is it?"
  pi-core chat
  pi-core chat --mcp 'uvx mcp-server-time' --mcp-url http://127.0.0.1:8000/mcp
  PI_CORE_PROXY_TOKEN=secret pi-core serve-proxy --port 8787
  pi-core serve                   # the run viewer page on http://127.0.0.1:8400/
  pi-core worker myapp.agents:agents --db sqlite:///runs.sqlite --executor-id w1
  pi-core runs start --db sqlite:///runs.sqlite --follow assistant "What is 2 + 3 * 4?"

exit status: 0 success, 1 a model or tool error ended the run, 2 usage error, 130 aborted"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pi-core`` command line; returns the exit status."""
    _tolerate_unencodable_output()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    _configure_logging(args.command in ("serve", "serve-proxy") or getattr(args, "verbose", False))
    try:
        return _dispatch(args)
    except UsageError as exc:
        print(f"pi-core: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Only where Ctrl-C cannot be received as a signal, or before the handler is installed.
        print("pi-core: interrupted", file=sys.stderr)
        return EXIT_ABORTED
    except Exception as exc:
        if not _is_broken_pipe(exc):
            raise
        # The reader went away (`pi-core run ... | head`): stop quietly, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pi-core`` and its commands."""
    parser = argparse.ArgumentParser(
        prog="pi-core",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    agent_options = _agent_options()
    run = commands.add_parser(
        "run", parents=[agent_options], help="run one prompt and show the agent at work"
    )
    run.add_argument("prompt", metavar="PROMPT", help="what to ask")
    run.add_argument(
        "--output-schema",
        metavar="FILE.json",
        type=Path,
        help="ask for an answer of the JSON Schema in FILE.json (the model answers by calling "
        "the final_result tool; an invalid answer is retried) and print it, validated, as the "
        "last line of JSON",
    )
    chat = commands.add_parser(
        "chat",
        parents=[agent_options],
        help="talk to the agent; lines typed while it works steer it",
    )
    chat.add_argument(
        "--session",
        metavar="FILE",
        type=Path,
        help="continue the session file FILE (a Pi coding agent session; created if missing), "
        "appending every message as it ends",
    )
    chat.add_argument(
        "--no-compaction",
        dest="compaction",
        action="store_false",
        help="never compact by itself (by default the older conversation is summarised when "
        "it would fill 80%% of the model's context window; /compact still works)",
    )
    chat.add_argument(
        "--context-window",
        metavar="TOKENS",
        type=_positive_int,
        help="the model's context window, for a model the catalogue does not know "
        "(compaction needs one)",
    )
    _add_serve_parser(commands)
    add_serve_ui_parser(commands, _add_backend)
    add_worker_parser(commands)
    add_runs_parser(commands)
    return parser


def _agent_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("agent options")
    group.add_argument(
        "--provider",
        choices=[name for name in PROVIDERS if name != "catalogue"],
        help="where the model is (default: the catalogue's provider of --model, else faux, "
        "the built-in demo model)",
    )
    group.add_argument(
        "--model",
        help="provider/id from the model catalogue (e.g. anthropic/claude-sonnet-4-5), "
        "or with --provider the model id",
    )
    group.add_argument(
        "--api",
        help="the model's api (openai-completions, anthropic-messages …); with --provider "
        "proxy, its api on the server",
    )
    group.add_argument("--base-url", help="the provider's base URL, or the proxy's URL")
    group.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the key (default: the provider's usual "
        f"one; {DEFAULT_PROXY_TOKEN_ENV} for the proxy)",
    )
    group.add_argument("--system", metavar="TEXT", help="the system prompt")
    group.add_argument(
        "--thinking",
        choices=get_args(ThinkingLevel),
        default="off",
        help="thinking level (default: off)",
    )
    group.add_argument(
        "--tool-execution",
        choices=("parallel", "sequential"),
        default="parallel",
        help="how a batch of tool calls runs (default: parallel)",
    )
    group.add_argument(
        "--mcp",
        metavar="'CMD ARGS...'",
        action="append",
        default=[],
        help="start an MCP server (one quoted command line) and add its tools; repeatable",
    )
    group.add_argument(
        "--mcp-url",
        metavar="URL",
        action="append",
        default=[],
        help="add the tools of a streamable-HTTP MCP server; repeatable",
    )
    _add_backend(group)
    group.add_argument(
        "--json", action="store_true", help="print one JSON event per line instead of the live view"
    )
    group.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="give up on a model request after this many seconds (default: no limit)",
    )
    group.add_argument(
        "--json-compact",
        action="store_true",
        help="as --json, but message_update events carry only the stream event without its "
        "partial message (the proxy's wire form): the message is in message_start / message_end",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also log pi_core's warnings and errors to stderr (tracebacks of failing tools)",
    )
    return parent


def _configure_logging(to_stderr: bool) -> None:
    """The live view shows every failure itself, so pi_core's log only goes to stderr on request
    (and always for the proxy server, which has no view)."""
    if to_stderr:
        logging.basicConfig(
            level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
    else:  # keep Python's last-resort handler from printing tracebacks over the view
        logging.getLogger("pi_core").addHandler(logging.NullHandler())


def _add_serve_parser(commands: Any) -> None:
    serve = commands.add_parser("serve-proxy", help="serve the proxy API with hypercorn")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"default: {DEFAULT_HOST}")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default: {DEFAULT_PORT}")
    serve.add_argument(
        "--backlog",
        type=_positive_int,
        default=DEFAULT_BACKLOG,
        help=f"connections the kernel queues before they are accepted (default: {DEFAULT_BACKLOG})",
    )
    serve.add_argument(
        "--token-env",
        metavar="VAR",
        default=DEFAULT_PROXY_TOKEN_ENV,
        help="environment variable holding the bearer token clients must send "
        f"(default: {DEFAULT_PROXY_TOKEN_ENV}); required",
    )
    _add_backend(serve)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_backend(group: Any) -> None:
    group.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="the event loop (default: asyncio)",
    )


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in _DURABLE_COMMANDS:  # DBOS runs on asyncio only
        return _run(functools.partial(_DURABLE_COMMANDS[args.command], args), "asyncio")
    if args.backend == "trio" and importlib.util.find_spec("trio") is None:
        raise UsageError(f"--backend trio needs trio: {install_hint('trio')}")
    if args.command == "serve":
        return _run(functools.partial(serve_ui_command, args), args.backend)
    if args.command == "serve-proxy":
        token = proxy_token(args.token_env)
        serve = functools.partial(
            serve_proxy, args.host, args.port, token, args.backend, args.backlog
        )
        _run(serve, args.backend)
        return 0
    settings = _settings(args)
    if args.command == "run":
        if not args.prompt.strip():
            raise UsageError("the prompt is empty")
        schema = read_output_schema(args.output_schema)
        command = functools.partial(run_command, settings, args.prompt, output_schema=schema)
        return _run(command, args.backend)
    chat = functools.partial(
        chat_command,
        settings,
        session=args.session,
        compaction=args.compaction,
        context_window=args.context_window,
    )
    return _run(chat, args.backend)


_DURABLE_COMMANDS: dict[str, Callable[[argparse.Namespace], Awaitable[int]]] = {
    "worker": worker_command,
    "runs": runs_command,
}


def _settings(args: argparse.Namespace) -> AgentSettings:
    return AgentSettings(
        provider=args.provider or ("catalogue" if args.model else "faux"),
        model=args.model,
        api=args.api,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        system=args.system,
        thinking=args.thinking,
        tool_execution=args.tool_execution,
        json=args.json or args.json_compact,
        json_compact=args.json_compact,
        timeout=args.timeout,
        mcp=tuple(args.mcp),
        mcp_urls=tuple(args.mcp_url),
    )


def _run(command: Callable[[], Awaitable[_T]], backend: str) -> _T:
    return anyio.run(command, backend=backend)


def _is_broken_pipe(exc: BaseException) -> bool:
    """A closed stdout, possibly inside the exception groups of the task groups it crossed."""
    if isinstance(exc, BrokenPipeError):
        return True
    if isinstance(exc, ConcurrentTaskError):
        return _is_broken_pipe(exc.group)
    inner: tuple[BaseException, ...] = getattr(exc, "exceptions", ())
    return bool(inner) and all(_is_broken_pipe(sub) for sub in inner)


def _tolerate_unencodable_output() -> None:
    # The live view draws arrows and check marks; a console that cannot encode them should
    # show a replacement character rather than crash the run.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
