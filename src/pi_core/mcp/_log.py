"""The logger of pi_core.mcp: a child of ``pi_core``'s, so one handler on ``pi_core`` sees both."""

from __future__ import annotations

import logging

logger = logging.getLogger("pi_core.mcp")
