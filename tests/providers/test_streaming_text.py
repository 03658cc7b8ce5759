"""Text and thinking streamed in tiny deltas grow in place, where providers build a reply and
where the proxy client rebuilds one: a delta costs the same however long the text has grown."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator

import pytest

from pi_core import Model, TextContent, ThinkingContent
from pi_core.providers._partial import PartialMessage
from pi_core.proxy._decode import WireDecoder

MODEL = Model("m", api="a", provider="p")
DELTAS = 20_000


def through_partial(kind: str) -> Iterator[tuple[int, str]]:
    """Stream one-character deltas of a ``kind`` block into a PartialMessage; after each
    delta, yield the identity of the block's string and its last character (keeping no
    reference to it, which would force a copy)."""
    partial = PartialMessage(MODEL)
    if kind == "text":
        index = partial.begin_text().content_index
        add: Callable[[int, str], object] = partial.add_text
    else:
        index = partial.begin_thinking().content_index
        add = partial.add_thinking
    for _ in range(DELTAS):
        add(index, "é")
        yield seen(partial.message.content[index])


def through_decoder(kind: str) -> Iterator[tuple[int, str]]:
    """The same through the proxy client's decoder, as wire lines."""
    decoder = WireDecoder(MODEL)
    list(decoder.feed(wire({"type": "start"})))
    list(decoder.feed(wire({"type": f"{kind}_start", "contentIndex": 0})))
    delta = wire({"type": f"{kind}_delta", "contentIndex": 0, "delta": "é"})
    for _ in range(DELTAS):
        list(decoder.feed(delta))
        yield seen(decoder.partial.content[0])


def wire(line: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(line).encode() + b"\n\n"


def seen(block: object) -> tuple[int, str]:
    if isinstance(block, TextContent):
        return id(block.text), block.text[-1]
    assert isinstance(block, ThinkingContent)
    return id(block.thinking), block.thinking[-1]


@pytest.mark.parametrize("kind", ["text", "thinking"])
@pytest.mark.parametrize("path", [through_partial, through_decoder])
def test_tiny_deltas_grow_the_text_in_place(
    path: Callable[[str], Iterator[tuple[int, str]]], kind: str
) -> None:
    # A string rebuilt by ``+=`` on the block is a new object at every delta (a copy of the
    # whole text: quadratic work); grown in place, it moves only when its memory does.
    identities = [identity for identity, last in path(kind) if last == "é"]
    assert len(identities) == DELTAS
    moves = sum(1 for a, b in itertools.pairwise(identities) if a != b)
    assert moves < DELTAS // 10  # copying: every delta; in place: a few hundred at most
