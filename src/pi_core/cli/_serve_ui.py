"""``pi-core serve``: the run viewer page (:func:`pi_core.ui.web_app`) with hypercorn.

Without arguments it chats with the demo agent on the built-in demo model (no network, no key);
``--agent MODULE:ATTR`` names a function that makes the Agent of each conversation instead, and
``--db URL`` adds the durable runs of that database.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from .. import Agent
from ..lowlevel import install_hint
from ._interrupt import stop_signals
from ._serve import DEFAULT_HOST, hypercorn_config, hypercorn_serve
from ._setup import AgentSettings, UsageError, build_agent
from ._worker import add_db_option, import_durable, load_agents

__all__ = ["DEFAULT_UI_PORT", "add_serve_ui_parser", "demo_agent", "serve_ui_command"]

DEFAULT_UI_PORT = 8400


def add_serve_ui_parser(commands: Any, add_backend: Callable[[Any], None]) -> None:
    """The ``serve`` command's parser."""
    serve = commands.add_parser(
        "serve", help="serve the run viewer page (chat, tool timeline, durable runs)"
    )
    serve.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="a function making the Agent of each conversation (default: the demo agent)",
    )
    add_db_option(serve)
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"default: {DEFAULT_HOST}")
    serve.add_argument(
        "--port", type=int, default=DEFAULT_UI_PORT, help=f"default: {DEFAULT_UI_PORT}"
    )
    serve.add_argument(
        "--token-env",
        metavar="VAR",
        help="environment variable holding a bearer token every request must carry",
    )
    add_backend(serve)


def demo_agent() -> Agent:
    """The demo agent of ``pi-core chat``: the demo model and the built-in tools."""
    agent, _ = build_agent(AgentSettings())
    return agent


async def serve_ui_command(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM."""
    try:
        from ..ui import web_app
    except ImportError as exc:
        raise UsageError(
            f"pi-core serve needs the ui extra: {install_hint('ui')} ({exc})"
        ) from None
    factory = _factory(args.agent)
    token = _token(args.token_env)
    with stop_signals() as stopped:
        async with AsyncExitStack() as stack:
            runs = None
            if args.db:
                runs = await stack.enter_async_context(import_durable().DurableRuns(args.db))
            app = web_app(agent_factory=factory, runs=runs, auth_token=token)
            config = hypercorn_config(args.host, args.port)
            serve = hypercorn_serve(args.backend)
            # Ctrl-C stops gracefully from the first line on. hypercorn logs the address once
            # bound (the real port, when asked for port 0).
            print("pi-core serve: the run viewer page at / ; Ctrl-C stops", file=sys.stderr)
            await serve(app, config, shutdown_trigger=stopped)
    return 0


def _factory(target: str | None) -> Callable[[], Agent]:
    if target is None:
        return demo_agent
    factory = load_agents(target, object)
    if not callable(factory):
        raise UsageError(f"{target} is a {type(factory).__name__}, not a function making an Agent")
    return factory  # type: ignore[no-any-return]


def _token(env_var: str | None) -> str | None:
    if env_var is None:
        return None
    token = os.environ.get(env_var, "").strip()
    if not token:
        raise UsageError(f"--token-env {env_var}: the environment variable is unset or empty")
    return token
