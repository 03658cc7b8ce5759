"""One peer case in its own process: ``python -m bench.peers.case pydantic-ai/streamed -n 200``.

It times the case with ``bench.case.measure``, the very loop that times pi_core's own cases (one
warm-up run, then at least ``--rounds`` rounds and more until ``--min-time`` seconds, a garbage
collection before each, on anyio's asyncio backend), checks the count every run returned and
prints one JSON line. Exit status 2 when the peer is not installed, 1 when a count is wrong.
``--profile`` runs one warm-up and one round under cProfile instead (``bench.case.profile``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .. import case
from ..scenarios import SPECS, Run

__all__ = ["PEERS", "Peer", "measure_peer"]

SCENARIO = "turns"
BACKEND = "asyncio"  # openai-agents runs on asyncio only, and every case runs on the same loop


@dataclass(frozen=True)
class Peer:
    """One case: a framework run one way."""

    key: str
    framework: str
    distribution: str
    """The installed distribution whose version is reported."""
    mode: str
    """How the run is driven, for the table."""
    factory: str | None
    """``module:function`` of a ``prepare(turns) -> PeerRun``; ``None`` for pi_core itself."""

    def expected(self, turns: int) -> tuple[str, int]:
        """What every run must return: pi_core its event count, a peer its tool calls."""
        if self.factory is None:
            spec = SPECS[SCENARIO]
            return "events", spec.events(turns) + spec.declared(turns)
        return "tool calls", turns - 1


PEERS: tuple[Peer, ...] = (
    Peer("pi_core", "pi_core", "pi-agent-core-py", "run_agent_loop, streamed", None),
    Peer(
        "pydantic-ai/streamed",
        "pydantic-ai",
        "pydantic-ai-slim",
        "agent.run + event_stream_handler, streamed",
        "bench.peers.pydantic_ai_peer:prepare_streamed",
    ),
    Peer(
        "pydantic-ai/function",
        "pydantic-ai",
        "pydantic-ai-slim",
        "agent.run, not streamed",
        "bench.peers.pydantic_ai_peer:prepare_function",
    ),
    Peer(
        "openai-agents/streamed",
        "openai-agents",
        "openai-agents",
        "Runner.run_streamed, streamed",
        "bench.peers.openai_agents_peer:prepare_streamed",
    ),
    Peer(
        "openai-agents/run",
        "openai-agents",
        "openai-agents",
        "Runner.run, not streamed",
        "bench.peers.openai_agents_peer:prepare_run",
    ),
)
BY_KEY = {peer.key: peer for peer in PEERS}


def measure_peer(peer: Peer, turns: int, rounds: int, min_time: float) -> dict[str, Any]:
    """Time ``peer`` at ``turns`` turns; raise ``RuntimeError`` if a run returned a wrong count."""
    result = case.measure(_impl(peer), SCENARIO, turns, BACKEND, rounds, min_time)
    what, want = peer.expected(turns)
    if result["events"] != [want]:
        raise RuntimeError(f"{peer.key}: runs returned {result['events']} {what}, want {want}")
    return {
        **result,
        "case": peer.key,
        "framework": peer.framework,
        "version": version(peer.distribution),
        "mode": peer.mode,
        "checked": what,
        "expected": want,
    }


def _impl(peer: Peer) -> str:
    """The name ``bench.case`` knows the peer by, registering it there first if need be."""
    return "pi_core" if peer.factory is None else _register(peer.key, peer.factory)


def _register(key: str, factory: str) -> str:
    """Make the peer an implementation ``bench.case.measure`` can look up, under ``key``.

    ``measure`` finds implementations in ``bench.case.IMPLS`` by name; adding the peer there
    (rather than copying the loop) keeps the peers timed exactly as pi_core is.
    """
    module_name, function_name = factory.split(":")
    prepare = getattr(importlib.import_module(module_name), function_name)

    def prepare_scenario(scenario: str, n: int) -> Run:
        if scenario != SCENARIO:
            raise ValueError(f"the peers only script the {SCENARIO} scenario, not {scenario}")
        run: Run = prepare(n)
        return run

    case.IMPLS[key] = prepare_scenario
    return key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer", choices=sorted(BY_KEY))
    parser.add_argument("-n", "--turns", type=int, default=200)
    parser.add_argument(
        "--rounds", type=int, default=case.DEFAULT_ROUNDS, help="at least this many"
    )
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds of timed rounds")
    parser.add_argument("--profile", action="store_true", help="one round under cProfile instead")
    parser.add_argument("--top", type=int, default=25, help="functions to show with --profile")
    args = parser.parse_args(argv)
    peer = BY_KEY[args.peer]
    try:
        if args.profile:
            case.profile(SCENARIO, args.turns, BACKEND, args.top, _impl(peer))
            return 0
        result = measure_peer(peer, args.turns, args.rounds, args.min_time)
    except (ImportError, PackageNotFoundError) as exc:
        hint = "pip install -r bench/peers/requirements.txt"
        print(f"{peer.key}: not installed ({exc}); {hint}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
