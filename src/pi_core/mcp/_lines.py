"""Newline-delimited messages from a byte stream, in linear time and bounded memory.

A message longer than the bound is not kept: its first and last bytes are (to name the request
it answers, and to quote it), and the rest is counted and dropped as it arrives.
"""

from __future__ import annotations

import re

import attrs

__all__ = ["LineSplitter", "Oversized", "request_id_of"]

_KEPT = 4096
"""Bytes kept from each end of an oversized message."""


@attrs.frozen
class Oversized:
    """A message longer than the bound: its size, and its first and last bytes."""

    size: int
    head: bytes
    tail: bytes


class LineSplitter:
    """Splits chunks of bytes into lines (without their ``\\n``), each at most ``limit`` bytes
    (``None``: no bound); a longer line comes out as an :class:`Oversized`.

    Each byte is copied a bounded number of times, whatever the sizes of the chunks and lines:
    the pieces of a line are kept apart and joined once, when its end arrives.
    """

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._pieces: list[bytes] = []
        self._size = 0
        self._tail = b""  # of an oversized line: its last bytes so far
        self._over = False

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines that ``chunk`` completes."""
        lines: list[bytes | Oversized] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._add(chunk[start:end])
            lines.append(self._take())
            start = end + 1
        if start < len(chunk):
            self._add(chunk[start:])
        return lines

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._over:
            self._tail = (self._tail + piece[-_KEPT:])[-_KEPT:]
            return
        self._pieces.append(piece)
        if self._limit is not None and self._size > self._limit:
            self._over = True  # keep the head, and from now on only the tail
            line = b"".join(self._pieces)
            self._pieces = [line[:_KEPT]]
            self._tail = line[-_KEPT:]

    def _take(self) -> bytes | Oversized:
        if self._over:
            line: bytes | Oversized = Oversized(self._size, self._pieces[0], self._tail)
        else:
            line = b"".join(self._pieces)
        self._pieces, self._size, self._tail, self._over = [], 0, b"", False
        return line


_ID = rb'("id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}"))'
_JSONRPC = rb'"jsonrpc"\s*:\s*"2\.0"'
_OUTCOME = rb'"(?:result|error)"\s*:'
_ID_FIRST = re.compile(rb"\A\s*\{\s*(?:" + _JSONRPC + rb"\s*,\s*)?" + _ID + rb"\s*,\s*" + _OUTCOME)
_OUTCOME_FIRST = re.compile(rb"\A\s*\{\s*" + _OUTCOME)
_ID_LAST = re.compile(rb",\s*" + _ID + rb"\s*(?:,\s*" + _JSONRPC + rb"\s*)?\}\s*\Z")


def request_id_of(message: Oversized) -> int | str | None:
    """The id of the response an oversized message is, when its id stands at the top level
    before its result (after ``jsonrpc``), or last after a result that comes first: where
    JSON-RPC libraries write them. Else ``None``: a request of the server's has an id too,
    which must not be taken for the id of one of ours."""
    match = _ID_FIRST.search(message.head)
    if match is None and _OUTCOME_FIRST.search(message.head):
        match = _ID_LAST.search(message.tail)
    if match is None:
        return None
    raw = match.group(2)
    if raw.startswith(b'"'):
        return raw[1:-1].decode("utf-8", "replace")
    return int(raw)
