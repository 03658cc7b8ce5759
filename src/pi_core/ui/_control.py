"""Run control as the front ends show it: the calls waiting for approval, the limit that ended a
run, and a person's decisions as the Agent's."""

from __future__ import annotations

from typing import Any

from .. import Approve, Deny, RunResult

__all__ = ["decisions_for", "limit_json"]


def limit_json(result: RunResult) -> dict[str, Any] | None:
    """The limit that ended the run, as the custom event carries it (``None``: none did)."""
    limit = result.stopped_by
    if limit is None:
        return None
    return {"kind": str(limit.kind), "limit": limit.limit, "value": limit.value}


def decisions_for(decisions: dict[str, tuple[bool, str | None]]) -> dict[str, Approve | Deny]:
    """The Agent's decisions: each call approved, or denied with a reason."""
    return {
        call_id: Approve() if approved else Deny(reason)
        for call_id, (approved, reason) in decisions.items()
    }
