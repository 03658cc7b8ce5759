"""Every async test runs on asyncio and on trio (when trio is installed)."""

from __future__ import annotations

import importlib.util
import os

# Runs check their invariants (the run's task group holds no other task while the model streams):
# set before pi_core is imported, which reads it once.
os.environ.setdefault("PI_CORE_DEBUG", "1")

import pytest
from hypothesis import HealthCheck, settings

_BACKENDS = ["asyncio"]
if importlib.util.find_spec("trio") is not None:
    _BACKENDS.append("trio")

settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(params=_BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def node() -> str:
    """Node with the TypeScript Pi's packages, for interop tests (see tests/node_interop.py)."""
    from node_interop import find_node

    return find_node()
