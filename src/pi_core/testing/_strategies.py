"""Hypothesis strategies for scripted runs, abort points and queue timings.

They shrink toward small, plain runs: fewer turns and calls, calls that succeed, no updates,
parallel mode, no cap, and the release order of the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs
from hypothesis import strategies as st

from .. import ToolExecution
from ._script import (
    CALL_OUTCOMES,
    CallOutcome,
    CallScript,
    RunScript,
    StopReasonScript,
    TurnScript,
)

__all__ = [
    "Injection",
    "abort_points",
    "call_scripts",
    "injections",
    "scripted_runs",
]

_TEXTS = ("", "Let me check that.")
# ``length`` is left out by default: its calls are answered without running, which the
# properties written over these scripts do not model (``stop`` covers a reply that ends with
# calls and another reason).
_STOP_REASONS: tuple[StopReasonScript, ...] = ("toolUse", "stop", "error")


def call_scripts(
    call_id: str,
    *,
    outcomes: Sequence[CallOutcome] = CALL_OUTCOMES,
    max_updates: int = 2,
    sequential: bool = True,
) -> st.SearchStrategy[CallScript]:
    """One tool call with the id ``call_id``: an outcome, some updates, maybe a sequential tool."""
    return st.builds(
        CallScript,
        st.just(call_id),
        st.sampled_from(list(outcomes)),
        st.integers(min_value=0, max_value=max_updates),
        st.booleans() if sequential else st.just(False),
    )


def scripted_runs(
    *,
    max_turns: int = 4,
    max_calls: int = 5,
    max_updates: int = 2,
    outcomes: Sequence[CallOutcome] = CALL_OUTCOMES,
    modes: Sequence[ToolExecution] = ("parallel", "sequential"),
    sequential_tools: bool = True,
    max_parallel: int | None = 3,
    stop_reasons: Sequence[StopReasonScript] = _STOP_REASONS,
    checkpoints: Sequence[bool] = (True, False),
) -> st.SearchStrategy[RunScript]:
    """A :class:`RunScript` of 1 to ``max_turns`` replies with 1 to ``max_calls`` calls each.

    Args:
        outcomes: the call outcomes to draw from (leave out ``"timeout"`` for runs that must
            be repeatable event for event: a timeout is the one thing that depends on time).
        modes: the loop's ``tool_execution`` values to draw from.
        sequential_tools: whether calls may use the tool with ``execution_mode="sequential"``.
        max_parallel: the largest ``max_parallel_tools`` to draw (``None``: never capped;
            a capped batch picks which calls start first by scheduling, not by script).
        stop_reasons: the stop reasons of the replies (``error`` ends the run).
        checkpoints: whether the model yields to the event loop between events.
    """
    # toolUse comes first and twice: hypothesis shrinks toward the first choice.
    reasons: list[StopReasonScript] = ["toolUse", "toolUse"]
    reasons += [reason for reason in stop_reasons if reason != "toolUse"]
    caps: st.SearchStrategy[int | None] = st.none()
    if max_parallel is not None:
        caps = st.one_of(caps, st.integers(min_value=1, max_value=max_parallel))
    # Every strategy is built once, here: building them per draw costs more than a whole run.
    parts = _Parts(
        turns=st.integers(min_value=1, max_value=max_turns),
        calls=st.integers(min_value=1, max_value=max_calls),
        call=st.tuples(
            st.sampled_from(list(outcomes)),
            st.integers(min_value=0, max_value=max_updates),
            st.booleans() if sequential_tools else st.just(False),
        ),
        reason=st.sampled_from(reasons),
        text=st.sampled_from(_TEXTS),
        mode=st.sampled_from(list(modes)),
        cap=caps,
        rank=st.integers(min_value=0, max_value=7),
        checkpoints=st.sampled_from(list(checkpoints)),
    )
    return _runs(parts)


@attrs.frozen
class _Parts:
    turns: st.SearchStrategy[int]
    calls: st.SearchStrategy[int]
    call: st.SearchStrategy[tuple[CallOutcome, int, bool]]
    reason: st.SearchStrategy[StopReasonScript]
    text: st.SearchStrategy[str]
    mode: st.SearchStrategy[ToolExecution]
    cap: st.SearchStrategy[int | None]
    rank: st.SearchStrategy[int]
    checkpoints: st.SearchStrategy[bool]


@st.composite
def _runs(draw: st.DrawFn, parts: _Parts) -> RunScript:
    turns = []
    for turn in range(draw(parts.turns)):
        calls = tuple(
            CallScript(f"t{turn}c{index}", *draw(parts.call)) for index in range(draw(parts.calls))
        )
        turns.append(TurnScript(calls, draw(parts.reason), draw(parts.text)))
    mode, cap = draw(parts.mode), draw(parts.cap)
    order: list[str] = []
    for turn_script in turns:
        # A shuffle of the batch's steps (a call's id once per step): each step draws a rank and
        # the steps are sorted by it, stably, so that rank 0 everywhere is the source order.
        steps = [
            call.id
            for call in turn_script.calls
            if call.executes and turn_script.runs_calls
            for _ in range(call.behaviour().steps)
        ]
        ranks = [draw(parts.rank) for _ in steps]
        order += [
            step for _, step in sorted(zip(ranks, steps, strict=True), key=lambda pair: pair[0])
        ]
    return RunScript(tuple(turns), mode, cap, tuple(order), draw(parts.checkpoints))


def abort_points(max_index: int = 200) -> st.SearchStrategy[int]:
    """The index of the event during which to abort a run (see :meth:`ScriptedRun.run`).

    A run with fewer events is not aborted; to abort every run, take the index modulo the
    length of an unaborted run of the same script.
    """
    return st.integers(min_value=0, max_value=max_index)


@attrs.frozen
class Injection:
    """A message to queue while event ``at_event`` is being delivered."""

    at_event: int
    kind: Literal["steer", "follow_up"]
    text: str


def injections(*, max_event: int = 40, max_size: int = 3) -> st.SearchStrategy[list[Injection]]:
    """Steering and follow-up messages queued at chosen events, in event order; texts unique."""

    def build(items: list[tuple[int, Literal["steer", "follow_up"]]]) -> list[Injection]:
        ordered = sorted(items, key=lambda item: item[0])
        return [Injection(at, kind, f"{kind} {n}") for n, (at, kind) in enumerate(ordered)]

    kinds: list[Literal["steer", "follow_up"]] = ["steer", "follow_up"]
    item = st.tuples(st.integers(min_value=0, max_value=max_event), st.sampled_from(kinds))
    return st.lists(item, max_size=max_size).map(build)
