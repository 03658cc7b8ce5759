"""Counting the steps of a backtracking regex engine, deterministically.

Python's ``re`` is a backtracking engine that reports nothing of its work, and wall time is no
measure on a shared machine. :func:`scan_steps` runs a parsed pattern on a text the way ``re``'s
``sub`` scans it (an attempt at each position, from left to right, going on after a match), with
the same backtracking order (greedy repeats give back one at a time, the alternatives of a
branch are tried in order), and counts one step per pattern item tried. A pattern that
backtracks exponentially or polynomially in ``re`` does so here too, in the same shapes.

It understands what the credential patterns and the classic bad shapes use: literals, sets,
``.``, groups (with or without a name, with inline flags), branches, greedy and lazy repeats,
look-ahead and fixed-width look-behind, back-references and ``\\b``-style anchors.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

if sys.version_info >= (3, 11):
    from re import _compiler as sre_compile
    from re import _constants as sre
    from re import _parser as sre_parse
else:  # pragma: no cover - exercised on 3.10 only
    import sre_compile
    import sre_constants as sre
    import sre_parse

__all__ = ["StepBudgetExceeded", "scan_steps"]

_CHAR_ITEMS = (sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY)


class StepBudgetExceeded(Exception):
    """The scan took more steps than it was allowed."""


@cache
def _item_regex(pattern: str, path: tuple[int, ...], flags: int) -> re.Pattern[str]:
    """A compiled regex of one single-character item of ``pattern`` (found by ``path``)."""
    parsed = sre_parse.parse(pattern)
    node: Any = parsed
    for index in path:
        node = node[index]
    return sre_compile.compile(sre_parse.SubPattern(parsed.state, [node]), flags)


class _Matcher:
    def __init__(self, pattern: str, text: str, budget: int) -> None:
        self.pattern = pattern
        self.text = text
        self.budget = budget
        self.steps = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.budget:
            raise StepBudgetExceeded(self.steps)

    def char(self, item: Any, path: tuple[int, ...], flags: int, pos: int) -> bool:
        if pos >= len(self.text):
            return False
        regex = _item_regex(self.pattern, path, flags)
        return regex.match(self.text[pos]) is not None

    def seq(
        self,
        items: Any,
        path: tuple[int, ...],
        index: int,
        pos: int,
        groups: dict[int, tuple[int, int]],
        flags: int,
        then: Callable[[int, dict[int, tuple[int, int]]], bool],
    ) -> bool:
        """Match ``items[index:]`` at ``pos``, then call ``then`` (the rest of the pattern)."""
        if index == len(items):
            return then(pos, groups)
        self.step()
        op, av = items[index]
        here = (*path, index)

        def rest(end: int, found: dict[int, tuple[int, int]]) -> bool:
            return self.seq(items, path, index + 1, end, found, flags, then)

        if op in _CHAR_ITEMS:
            return self.char(av, here, flags, pos) and rest(pos + 1, groups)
        if op is sre.AT:
            return rest(pos, groups)  # anchors cost a step and never backtrack
        if op is sre.SUBPATTERN:
            group, add, remove, sub = av
            inner = (flags | add) & ~remove

            def close(end: int, found: dict[int, tuple[int, int]]) -> bool:
                if group is not None:
                    found = {**found, group: (pos, end)}
                return rest(end, found)

            return self.seq(sub, (*here, 1, 3), 0, pos, groups, inner, close)
        if op is sre.BRANCH:
            for number, alt in enumerate(av[1]):  # a loop, not any(): no C frame per level
                if self.seq(alt, (*here, 1, 1, number), 0, pos, groups, flags, rest):
                    return True
            return False
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, sub = av
            greedy = op is sre.MAX_REPEAT
            return self.repeat(sub, (*here, 1, 2), low, high, greedy, 0, pos, groups, flags, rest)
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            direction, sub = av
            width = sub.getwidth()[0] if direction < 0 else 0
            start = pos - width
            hit = start >= 0 and self.seq(
                sub,
                (*here, 1, 1),
                0,
                start,
                groups,
                flags,
                lambda end, _: direction > 0 or end == pos,
            )
            return hit == (op is sre.ASSERT) and rest(pos, groups)
        if op is sre.GROUPREF:
            if av not in groups:
                return False
            start, end = groups[av]
            captured = self.text[start:end]
            ok = self.text.startswith(captured, pos)
            return ok and rest(pos + len(captured), groups)
        raise NotImplementedError(f"regex item {op} is not modelled")

    def repeat(
        self,
        sub: Any,
        path: tuple[int, ...],
        low: int,
        high: int,
        greedy: bool,
        count: int,
        pos: int,
        groups: dict[int, tuple[int, int]],
        flags: int,
        then: Callable[[int, dict[int, tuple[int, int]]], bool],
    ) -> bool:
        self.step()

        def more() -> bool:
            if count >= high:
                return False

            def again(end: int, found: dict[int, tuple[int, int]]) -> bool:
                if end == pos and count >= low:
                    return False  # an empty iteration ends the loop, as in re
                return self.repeat(sub, path, low, high, greedy, count + 1, end, found, flags, then)

            return self.seq(sub, path, 0, pos, groups, flags, again)

        def stop() -> bool:
            return count >= low and then(pos, groups)

        return (more() or stop()) if greedy else (stop() or more())


def scan_steps(pattern: str, text: str, budget: int) -> tuple[int, list[tuple[int, int]]]:
    """The steps a backtracking engine takes to find every match of ``pattern`` in ``text``
    as ``re.sub`` does, and the spans it found; raises :class:`StepBudgetExceeded` past
    ``budget``."""
    parsed = sre_parse.parse(pattern)
    matcher = _Matcher(pattern, text, budget)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 40 * len(text) + 1000))
    try:
        pos, spans = 0, []
        while pos <= len(text):
            ends: list[int] = []

            def found(
                end: int, _groups: dict[int, tuple[int, int]], ends: list[int] = ends
            ) -> bool:
                ends.append(end)
                return True

            matcher.seq(parsed, (), 0, pos, {}, parsed.state.flags, found)
            if ends:
                spans.append((pos, ends[0]))
            pos = ends[0] if ends and ends[0] > pos else pos + 1
    finally:
        sys.setrecursionlimit(limit)
    return matcher.steps, spans
