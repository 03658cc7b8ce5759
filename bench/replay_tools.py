"""``python -m bench.replay_tools``: replaying the tools a long transcript declares.

The transcript owns the tool declarations: its leading system message declares the first tools,
and each later one adds or removes some. What a model is sent, what a resumed session offers and
what a run compares its tools with is the replay of all of them (``current_tools``), so its cost
grows with the transcript. This prints, per transcript, the milliseconds of one replay (the best
of several rounds); a transcript of 1 000 messages with 20 tool changes must take well under 1 ms.

    python -m bench.replay_tools                       # 1 000, 10 000 and 100 000 messages
    python -m bench.replay_tools --size 1000 --changes 20

JSON lines go to stdout, then a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from pi_core import (
    AgentMessage,
    AssistantMessage,
    SystemMessage,
    TextContent,
    Tool,
    ToolReference,
    UserMessage,
    current_tools,
)

__all__ = ["main", "measure", "transcript", "wanted_tools"]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
DEFAULT_CHANGES = 20
ROUNDS = 50
_ORIGIN = ("bench", "bench", "bench")  # api, provider, model of the replies
_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"path": {"type": "string"}}}


def _tool(index: int) -> Tool:
    return Tool(f"tool_{index}", f"The tool number {index}.", _SCHEMA)


def transcript(size: int, changes: int) -> list[AgentMessage]:
    """``size`` messages: a leading system message declaring five tools, then user and assistant
    turns with ``changes`` system messages spread among them, each adding one tool and removing
    the oldest still declared."""
    messages: list[AgentMessage] = [
        SystemMessage("You are terse.", None, [_tool(i) for i in range(5)])
    ]
    every = max(1, (size - 1) // (changes + 1))
    change = 0
    while len(messages) < size:
        if change < changes and len(messages) % every == 0:
            added, removed = _tool(5 + change), ToolReference(f"tool_{change}")
            messages.append(SystemMessage("", None, [added], [removed]))
            change += 1
        elif len(messages) % 2:
            messages.append(UserMessage("What is in the file?"))
        else:
            messages.append(AssistantMessage([TextContent("It holds the answer.")], *_ORIGIN))
    assert change == changes, "the transcript must hold every change"
    return messages


def wanted_tools(changes: int) -> list[str]:
    """The names of the tools the transcript of ``changes`` changes declares at its end."""
    return [f"tool_{index}" for index in range(changes, changes + 5)]


def measure(size: int, changes: int, rounds: int = ROUNDS) -> dict[str, object]:
    """The best of ``rounds`` replays of a transcript of ``size`` messages and ``changes``
    tool changes."""
    messages = transcript(size, changes)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        tools = current_tools(messages)
        best = min(best, time.perf_counter() - start)
    assert [tool.name for tool in tools] == wanted_tools(changes), "the replay must be right"
    return {
        "scenario": "replay_tools",
        "params": {"messages": size, "changes": changes, "rounds": rounds},
        "seconds": round(best, 7),
        "per_unit_us": round(best / size * 1e6, 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay_tools")
    parser.add_argument("--size", type=int, action="append", help="messages in the transcript")
    parser.add_argument("--changes", type=int, default=DEFAULT_CHANGES, help="tool changes")
    args = parser.parse_args(argv)
    rows = []
    for size in args.size or DEFAULT_SIZES:
        row = measure(size, args.changes)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("\n| messages | tool changes | ms per replay | µs per message |\n|--:|--:|--:|--:|")
    for row in rows:
        params = row["params"]
        assert isinstance(params, dict)
        milliseconds = float(row["seconds"]) * 1e3  # type: ignore[arg-type]
        print(
            f"| {params['messages']:,} | {params['changes']} | {milliseconds:.4f} | "
            f"{row['per_unit_us']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
