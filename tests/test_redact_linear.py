"""Redaction takes time linear in its input, whatever the input: counted in the steps of a
backtracking engine (``tests/_regex_steps.py``), never in seconds.

An error text is written by a server, and may quote what a client sent (a model id, a header):
a pattern that backtracks lets one request hold the event loop for as long as its author likes.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from _regex_steps import StepBudgetExceeded, scan_steps
from pi_core._redact import _CREDENTIALS, PATTERNS, redact_credentials

STEPS_PER_CHAR = 100
"""The bound: scanning a text of n characters takes at most this many steps per character (the
patterns measure about 70 on their worst texts here, and a quadratic pattern passes 900 on a
text of 150 characters)."""

FRAGMENTS = [
    "b'", 'b"', "\\", "'", '"', "key", "token", "Secret", "=", ": ", " ", "\t", "\n", "sk-",
    "Bearer ", "Basic ", "://", "@", ":", "/", "eyJ", "AKIA", "ghp_", "a", "Z", "0", "-", "_", ".",
    "&", "?", "x" * 20,
]  # fmt: skip
"""The pieces of adversarial texts: the starts of every pattern, what they repeat, what ends
them, and the quotes and backslashes of quoted values."""

adversarial = st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join)


def budget(text: str) -> int:
    return STEPS_PER_CHAR * (len(text) + 1)


@given(adversarial)
@example("b'" + "\\" * 44)  # a model id quoted back by a server, as OpenAI's 404 does
@example("key" * 100)  # the polynomial case: a long run of a key word
@example("b'\\'" * 60)
@example("eyJ" * 90 + "://a:" * 30)
@example("Bearer " + "Bearer" * 40)
def test_redaction_is_linear_in_steps(text: str) -> None:
    try:
        steps, spans = scan_steps(_CREDENTIALS.pattern, text, budget(text))
    except StepBudgetExceeded as exc:
        pytest.fail(f"{exc.args[0]} steps for {len(text)} characters: {text!r}")
    # The counted engine finds what re finds, so the count is of the real patterns' work.
    assert spans == [match.span() for match in _CREDENTIALS.finditer(text)]
    assert steps <= budget(text)


@given(adversarial)
def test_redaction_is_idempotent_and_never_grows_a_text_much(text: str) -> None:
    once = redact_credentials(text)
    assert redact_credentials(once) == once
    assert len(once) <= len(text) + len("[redacted]") * (text.count(":") + len(text) // 8 + 1)


@pytest.mark.parametrize(
    "pattern",
    [
        r"""b(['"])(?:\\.|(?!\1).)*\1""",
        r"""(?i)([\w-]*(?:key|token|secret|password|signature|auth)["']?\s*[:=]\s*["']?)[^\s'"&,;}]+""",
    ],
    ids=["quoted-literal", "key-pair"],
)
def test_the_step_count_catches_backtracking_patterns(pattern: str) -> None:
    """The shapes of an earlier scrubber: exponential and quadratic in the counted engine too."""
    text = "b'" + "\\" * 24 if pattern.startswith("b") else "key" * 100
    with pytest.raises(StepBudgetExceeded):
        scan_steps(pattern, text, budget(text))
    assert re.search(pattern, "b'x' key=v") is not None  # the patterns do match what they should


@pytest.mark.parametrize("kind", PATTERNS)
def test_each_pattern_alone_is_linear_on_its_own_worst_texts(kind: str) -> None:
    pattern = PATTERNS[kind]
    for fragment in FRAGMENTS:
        text = fragment * (300 // len(fragment))
        scan_steps(pattern, text, budget(text))
