"""Agent factories that ``pi-core serve --agent`` loads in the page's tests (tests/ui on the
child's PYTHONPATH)."""

from __future__ import annotations

from pi_core import Agent
from pi_core.cli._setup import AgentSettings, build_agent
from ui.ui_support import approving_agent as approving

__all__ = ["approving", "demo"]


def demo() -> Agent:
    """The demo agent of ``pi-core chat`` (its tools, its research sub-agent), streaming as fast
    as it can: a page test watches the run, it does not wait for it."""
    agent, _ = build_agent(AgentSettings(json=True))
    return agent
