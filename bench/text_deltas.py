"""``python -m bench.text_deltas``: one reply of many tiny text deltas, through the whole run.

A provider builds the reply with ``PartialMessage`` and the loop hands every delta to the
listeners; a model that streams character by character sends a delta per character. Each delta
must cost the same however long the text has grown: this prints, per size, the CPU seconds of
the whole run and the microseconds per delta, which stay flat when the work is linear. (The
``streaming`` scenario of ``python -m bench`` measures the loop alone, with a reply that does not
grow.)

    python -m bench.text_deltas                     # 100 000, 300 000 and 1 000 000 deltas
    python -m bench.text_deltas --size 2000000 --backend trio

JSON lines go to stdout, then a Markdown table.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel

from pi_core import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AssistantMessageEvent,
    Context,
    Model,
    StreamOptions,
    UserMessage,
    run_agent_loop,
)
from pi_core.providers._partial import PartialMessage

from .report import field, param, print_report, sizes_and_backends, sweep

__all__ = ["main", "measure"]

DEFAULT_SIZES = (100_000, 300_000, 1_000_000)
MODEL = Model("m", api="bench", provider="bench")


class OneCharacterDeltas:
    """A stream function replying ``deltas`` one-character text deltas, built as a provider
    builds them, with a checkpoint every 64 deltas (as a network read would)."""

    __slots__ = ("_deltas",)

    def __init__(self, deltas: int) -> None:
        self._deltas = deltas

    async def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        partial = PartialMessage(model)
        yield partial.start()
        start = partial.begin_text()
        yield start
        for count in range(self._deltas):
            if count % 64 == 0:
                await anyio.lowlevel.checkpoint()
            yield partial.add_text(start.content_index, "x")
        [end] = partial.end_all()
        yield end
        yield partial.done()


async def _run(deltas: int) -> int:
    """The whole run; returns the length of the final text."""
    seen = 0

    def listen(event: AgentEvent) -> None:
        nonlocal seen
        seen += 1

    config = AgentLoopConfig(MODEL, stream_fn=OneCharacterDeltas(deltas))
    messages = await run_agent_loop([UserMessage("go")], AgentContext(), config, listen)
    final = messages[-1]
    assert seen == deltas + 10, "every delta reaches the listener"
    return len(final.content[0].text)  # type: ignore[union-attr]


def measure(deltas: int, backend: str) -> dict[str, object]:
    """One run of ``deltas`` deltas on ``backend``; CPU seconds and µs per delta."""
    start = time.process_time()
    length = anyio.run(_run, deltas, backend=backend)
    seconds = time.process_time() - start
    assert length == deltas, "the final text holds every delta"
    return {
        "scenario": "text_deltas",
        "params": {"D": deltas, "backend": backend},
        "seconds": round(seconds, 3),
        "per_unit_us": round(seconds / deltas * 1e6, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = sizes_and_backends("python -m bench.text_deltas", "deltas in the reply")
    args = parser.parse_args(argv)
    columns = [
        ("backend", param("backend")),
        ("deltas", param("D", ",")),
        ("CPU seconds", field("seconds")),
        ("µs per delta", field("per_unit_us")),
    ]
    print_report(sweep(args, measure, DEFAULT_SIZES), columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
