"""An agent run streamed to a web client as Server-Sent Events.

:func:`agent_events_response` turns one prompt of an :class:`~pi_core.Agent` into a Starlette
(or FastAPI) response that streams the run's events, one ``data:`` line of JSON each, and lives
exactly as long as the run. It needs Starlette (the ``server`` extra) when it is called;
importing this module does not.
"""

from __future__ import annotations

from .._public import publish_module_names
from ._response import DEFAULT_BUFFER_SIZE, agent_events_response, sse_data

__all__ = ("DEFAULT_BUFFER_SIZE", "agent_events_response", "sse_data")

publish_module_names(globals(), __all__, __name__)
