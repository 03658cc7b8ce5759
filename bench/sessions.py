"""``python -m bench.sessions``: a long conversation recorded to a session file, with compaction.

A faux model with a small context window answers every prompt; the Agent compacts whenever the
next request would pass the policy's threshold, and every message and compaction is appended to
the session file as it happens. This prints how large the largest request got (it must stay
under the budget, however many turns there were), how many compactions that took, the size of
the file, and how long reopening it and rebuilding its messages takes.

    python -m bench.sessions                      # 10 000 turns
    python -m bench.sessions --turns 2000 --backend trio

One JSON line goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from pi_core import Agent, CompactionPolicy, Context, estimate_tokens
from pi_core.providers.faux import FauxProvider, faux_assistant_message
from pi_core.sessions import SessionFile, record

__all__ = ["main", "measure"]

WINDOW = 8_000
"""The faux model's context window, in estimated tokens."""
POLICY = CompactionPolicy(threshold=0.8, keep_recent_tokens=2_000)


async def measure(turns: int, directory: Path) -> dict[str, Any]:
    """Run ``turns`` prompts through a compacting, recorded Agent; then reopen the file."""
    faux = FauxProvider(models=[{"id": "bench", "context_window": WINDOW}])
    largest = 0

    def reply(context: Context, *_: Any) -> Any:
        nonlocal largest
        largest = max(largest, estimate_tokens(context.messages))
        if "<conversation>" in str(context.messages[0].content):
            return faux_assistant_message("The user asked numbered questions; all were answered.")
        return faux_assistant_message("An answer of about a hundred characters. " * 3)

    path = directory / "bench.jsonl"
    session = SessionFile.create(path)
    agent = Agent(model=faux.get_model(), stream_fn=faux.stream, compaction=POLICY)
    record(agent, session)
    started = time.perf_counter()
    for turn in range(turns):
        faux.append_responses([reply, reply])  # the answer, and a summary request if one comes
        await agent.prompt(f"Question number {turn}: what comes next in the series? " * 2)
        faux.set_responses([])
    run_seconds = time.perf_counter() - started
    session.close()
    started = time.perf_counter()
    with SessionFile.open(path, read_only=True) as reopened:
        messages = reopened.messages()
    reopen_seconds = time.perf_counter() - started
    return {
        "turns": turns,
        "budget_tokens": int(POLICY.threshold * WINDOW),
        "largest_request_tokens": largest,
        "compactions": agent.state.compactions,
        "file_bytes": path.stat().st_size,
        "messages_after_reopen": len(messages),
        "reopen_seconds": round(reopen_seconds, 3),
        "run_seconds": round(run_seconds, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sessions", description=__doc__)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        result = anyio.run(measure, args.turns, Path(directory), backend=args.backend)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
