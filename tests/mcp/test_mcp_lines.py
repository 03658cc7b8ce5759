"""The stdio transport's line splitter: the lines of any chunking, and a bound on each."""

from __future__ import annotations

import random

import pytest

from pi_core.mcp._lines import LineSplitter, Oversized, request_id_of


def split(data: bytes, limit: int | None, seed: int) -> list[bytes | Oversized]:
    """``data`` fed to a splitter in chunks of random sizes."""
    rng = random.Random(seed)
    splitter = LineSplitter(limit)
    lines: list[bytes | Oversized] = []
    start = 0
    while start < len(data):
        end = start + rng.randint(1, 300)
        lines.extend(splitter.feed(data[start:end]))
        start = end
    return lines


@pytest.mark.parametrize("seed", range(20))
def test_any_chunking_gives_the_same_lines(seed: int) -> None:
    rng = random.Random(seed)
    lines = [bytes(rng.choices(b"ab{}", k=rng.randint(0, 500))) for _ in range(30)]
    data = b"\n".join(lines) + b"\n"
    assert split(data, None, seed) == lines
    assert split(data, 500, seed) == lines


@pytest.mark.parametrize("seed", range(5))
def test_a_line_over_the_limit_keeps_only_its_ends(seed: int) -> None:
    long = b'{"jsonrpc": "2.0", "id": 7, "result": "' + b"x" * 100_000 + b'"}'
    data = b"short\n" + long + b"\nnext\n"
    short, over, after = split(data, 1000, seed)
    assert (short, after) == (b"short", b"next")
    assert isinstance(over, Oversized)
    assert over.size == len(long)
    assert long.startswith(over.head) and long.endswith(over.tail)
    assert len(over.head) <= 4096 and len(over.tail) <= 4096


@pytest.mark.parametrize(
    ("head", "tail", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":12,"result":{', b"}}", 12),
        (b' { "id" : "a-1" , "result": {', b"}}", "a-1"),
        (b'{"result":{"content":[', b']}, "jsonrpc": "2.0", "id": -3}', -3),
        (b'{"result":{', b'}, "id": 4, "jsonrpc": "2.0"}\r', 4),
        (b'{"error":{"code":1,', b'}, "id": "e"}', "e"),
        (b'{"result":{"id":5,', b'"x"}}', None),  # a nested id is not the message's
        (b'{"method":"notifications/message","params":{', b'"x"}}', None),
        # A request of the server's, however its keys are ordered: its id is not one of ours.
        (b'{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{', b"}}", None),
        (b'{"params":{', b'}, "method": "roots/list", "id": 1}', None),
    ],
)
def test_the_id_of_an_oversized_response(head: bytes, tail: bytes, expected: object) -> None:
    assert request_id_of(Oversized(10**6, head, tail)) == expected
