"""What OpenRouter says a request cost, from the accounting it adds to the streamed usage.

OpenRouter reports ``cost`` (what it billed) and ``is_byok``. With its own keys the billed cost is
the whole cost. With the user's own provider key (BYOK) OpenRouter bills only its fee, and the
provider's inference cost comes in ``cost_details`` (``upstream_inference_cost``, or its prompt
and completion parts); the whole cost is the sum. Incomplete or invalid accounting gives
``None``, and the catalogue's prices stand.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["billed_cost"]


def billed_cost(usage: dict[str, Any]) -> float | None:
    """The whole cost in dollars of the request whose ``usage`` this is, or ``None``."""
    billed = usage.get("cost")
    if not _valid(billed):
        return None
    assert isinstance(billed, (int, float))
    byok = usage.get("is_byok")
    if byok is False:
        return float(billed)
    if byok is not True:
        return None
    details = usage.get("cost_details")
    if not isinstance(details, dict):
        return None
    upstream = details.get("upstream_inference_cost")
    if upstream is None:
        prompt = details.get("upstream_inference_prompt_cost")
        completion = details.get("upstream_inference_completions_cost")
        if not (_valid(prompt) and _valid(completion)):
            return None
        assert isinstance(prompt, (int, float)) and isinstance(completion, (int, float))
        upstream = prompt + completion
    if not _valid(upstream):
        return None
    return float(billed + upstream)


def _valid(value: object) -> bool:
    """A cost as a number can be: finite and not negative (a bool is no cost)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
