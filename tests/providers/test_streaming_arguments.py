"""Large tool arguments streamed in small fragments: parsed a bounded number of times, never
going backwards, and whole at the end, where providers build a reply and where the proxy client
rebuilds one."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest

import pi_core.providers._partial as partial_module
import pi_core.proxy._decode as decode_module
from pi_core import Model, ToolCall
from pi_core.providers._partial import PartialMessage
from pi_core.proxy._decode import WireDecoder

MODEL = Model("m", api="a", provider="p")
DELTA = 4


def file_arguments(size: int) -> str:
    content = "".join(f"line {n}: print('hello')\n" for n in range(size // 24 + 1))[:size]
    return json.dumps({"path": "out.py", "content": content})


def fragments(text: str) -> list[str]:
    return [text[i : i + DELTA] for i in range(0, len(text), DELTA)]


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of ``module.name`` (the sizes of the texts it parsed)."""
    calls: list[int] = []
    original: Callable[..., Any] = getattr(module, name)

    def counted(text: str, *args: Any) -> Any:
        calls.append(len(text))
        return original(text, *args)

    monkeypatch.setattr(module, name, counted)
    return calls


def stream_through_partial(text: str, seen: list[dict[str, Any]]) -> ToolCall:
    partial = PartialMessage(MODEL)
    index = partial.begin_tool_call("c1", "write_file").content_index
    for fragment in fragments(text):
        partial.add_tool_json(index, fragment)
        seen.append(partial.tool_call(index).arguments)
    partial.end_block(index)
    return partial.tool_call(index)


def stream_through_decoder(text: str, seen: list[dict[str, Any]]) -> ToolCall:
    decoder = WireDecoder(MODEL)
    lines: list[dict[str, Any]] = [
        {"type": "start"},
        {"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": "write_file"},
    ]
    lines += [{"type": "toolcall_delta", "contentIndex": 0, "delta": f} for f in fragments(text)]
    lines.append({"type": "toolcall_end", "contentIndex": 0})
    for line in lines:
        for event in decoder.feed(b"data: " + json.dumps(line).encode() + b"\n\n"):
            if event.type == "toolcall_delta":
                block = decoder.partial.content[0]
                assert isinstance(block, ToolCall)
                seen.append(block.arguments)
    block = decoder.partial.content[0]
    assert isinstance(block, ToolCall)
    return block


PATHS = {
    "partial message": (stream_through_partial, partial_module, "parse_partial_json"),
    "proxy decoder": (stream_through_decoder, decode_module, "parse_streaming_json"),
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_large_arguments_are_parsed_a_bounded_number_of_times(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream, module, parser = PATHS[path]
    text = file_arguments(256 * 1024)
    calls = counting(monkeypatch, module, parser)
    seen: list[dict[str, Any]] = []
    call = stream(text, seen)
    assert call.arguments == json.loads(text)  # whole at the end
    # Every fragment up to 8 KiB, then at sizes a quarter apart: a few thousand parses for
    # 65,000 fragments, and past the first 8 KiB their total size linear in the text's.
    small = 8 * 1024 // DELTA
    assert len(calls) < small + 40
    assert sum(calls[small:]) < 6 * len(text)
    contents = [arguments.get("content", "") for arguments in seen]
    assert all(a == b[: len(a)] for a, b in itertools.pairwise(contents))
    assert contents[-1] == json.loads(text)["content"][: len(contents[-1])]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_small_arguments_are_read_after_every_fragment(path: str) -> None:
    stream, module, parser = PATHS[path]
    text = json.dumps({"command": "ls -la", "cwd": "/tmp", "env": {"A": "1"}})
    seen: list[dict[str, Any]] = []
    stream(text, seen)
    parse = getattr(module, parser)
    previous: dict[str, Any] = {}
    for count, arguments in enumerate(seen, start=1):
        received = "".join(fragments(text)[:count])
        expected = parse(received, previous) if parser == "parse_partial_json" else parse(received)
        assert arguments == expected
        previous = arguments


@pytest.mark.parametrize(
    ("received", "expected"),
    [
        ('{"cmd": "a\tb', {"cmd": "a\tb"}),  # a raw tab, which strict JSON refuses
        ('{"path": "C:\\dir', {"path": "C:\\dir"}),  # an invalid escape stays literal text
        ('{"line": "one\ntwo", "n": 1', {"line": "one\ntwo", "n": 1}),
    ],
)
def test_arguments_that_are_not_quite_json_show_while_they_stream(
    received: str, expected: dict[str, Any]
) -> None:
    seen: list[dict[str, Any]] = []
    partial = PartialMessage(MODEL)
    index = partial.begin_tool_call("c1", "run").content_index
    partial.add_tool_json(index, received)
    seen.append(partial.tool_call(index).arguments)
    assert seen == [expected]
