"""Runs you can watch: an Agent behind the AG-UI protocol and the AI SDK's UI message stream,
and a web page that draws a run.

* :func:`ag_ui_app` serves the AG-UI protocol (CopilotKit's clients, ``@ag-ui/client``).
* :func:`ui_message_stream` writes a run as the Vercel AI SDK's UI message stream.
* :func:`web_app` serves the run viewer page (``pi-core serve``).

Needs the ``ui`` extra (Starlette and the ``ag-ui-protocol`` types).
"""

from __future__ import annotations

from .._public import publish_module_names
from ._ag_ui_app import ag_ui_app
from ._ui_message_stream import (
    UI_MESSAGE_STREAM_HEADERS,
    ui_message_stream,
    ui_message_stream_response,
)
from ._web import web_app

__all__ = (
    "UI_MESSAGE_STREAM_HEADERS",
    "ag_ui_app",
    "ui_message_stream",
    "ui_message_stream_response",
    "web_app",
)

publish_module_names(globals(), __all__, __name__)
