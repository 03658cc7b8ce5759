"""Fixtures of the pi_core.ui tests: Node with the AG-UI client and the AI SDK installed."""

from __future__ import annotations

from pathlib import Path

import pytest

NODE_PACKAGES = Path(__file__).parent / "node"


@pytest.fixture(scope="module")
def ui_node() -> str:
    """Node with ``@ag-ui/client`` and ``ai`` installed from tests/ui/node (else a skip)."""
    from node_interop import find_node

    return find_node(NODE_PACKAGES)
