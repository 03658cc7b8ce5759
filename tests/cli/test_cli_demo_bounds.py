"""The demo model as a server runs it: what it keeps and what it reads stay bounded."""

from __future__ import annotations

import tracemalloc
from collections.abc import AsyncIterable

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_core import AssistantMessage, Context, StreamDone, StreamOptions, ToolCall, UserMessage
from pi_core.cli._demo import DemoModel, demo_reply
from pi_core.providers._faux_stream import common_prefix_length
from pi_core.providers._prompt_cache import MAX_CACHED_CHARS, MAX_CACHED_SESSIONS, PromptCache


def calculate_argument(prompt: str) -> object:
    reply = demo_reply(
        Context(None, [UserMessage(prompt)], []), StreamOptions(), 0, DemoModel().model
    )
    [calc] = [b for b in reply.content if isinstance(b, ToolCall) and b.name == "calculate"]
    return calc.arguments["expression"]


def test_the_planner_reads_the_start_of_a_prompt_only() -> None:
    assert calculate_argument("what is 12 * 12") == "12 * 12"
    # Past what the planner reads, the arithmetic is not seen: the default is planned.
    assert calculate_argument("x" * 5000 + " what is 12 * 12") == "6 * 7"


async def reply_usage(demo: DemoModel, prompt: str, session_id: str) -> tuple[int, int]:
    """(cache_read, cache_write) of one demo reply to ``prompt`` in ``session_id``."""
    options = StreamOptions(session_id=session_id)
    context = Context(None, [UserMessage(prompt, timestamp=1)], [])
    final = None
    with anyio.fail_after(30):
        events = demo.stream(demo.model, context, options)
        assert isinstance(events, AsyncIterable)
        async for event in events:
            if isinstance(event, StreamDone):
                final = event.message
    assert isinstance(final, AssistantMessage)
    return final.usage.cache_read, final.usage.cache_write


@pytest.mark.anyio
async def test_the_prompt_cache_forgets_the_least_recently_used_session() -> None:
    demo = DemoModel(tokens_per_second=None)
    first = await reply_usage(demo, "hello there", "s0")
    assert first[0] == 0
    assert (await reply_usage(demo, "hello there", "s0"))[0] > 0  # cached
    for index in range(1, MAX_CACHED_SESSIONS + 1):
        await reply_usage(demo, "hello there", f"s{index}")
    assert await reply_usage(demo, "hello there", "s0") == first  # forgotten: a first prompt


@pytest.mark.anyio
async def test_large_prompts_of_many_sessions_are_not_kept_for_ever() -> None:
    demo = DemoModel(tokens_per_second=None)
    prompt = "p" * 4_000_000
    tracemalloc.start()
    try:
        for index in range(10):
            await reply_usage(demo, prompt, f"client-chosen-{index}")
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # At most MAX_CACHED_CHARS of prompts (2 of these), not 10 of them.
    assert kept < 3 * len(prompt) + 8_000_000


def test_the_cache_keeps_its_bounds() -> None:
    cache = PromptCache(max_sessions=3, max_chars=10)
    assert cache.swap("a", "1234") is None
    assert cache.swap("b", "5678") is None
    assert cache.swap("a", "12345") == "1234"
    assert cache.swap("c", "90") is None
    assert (len(cache), cache.chars) == (2, 7)  # "b" went first: the chars limit
    assert cache.swap("d", "x" * 11) is None  # longer than the limit: not kept
    assert cache.swap("d", "y") is None
    assert cache.swap("e", "z") is None
    assert cache.swap("f", "w") is None
    assert len(cache) == 3
    assert MAX_CACHED_CHARS > 0


@given(st.text("ab", max_size=40), st.text("ab", max_size=40))
def test_common_prefix_length_is_the_length_of_the_shared_start(a: str, b: str) -> None:
    length = common_prefix_length(a, b)
    assert a[:length] == b[:length]
    assert length == min(len(a), len(b)) or a[length] != b[length]
