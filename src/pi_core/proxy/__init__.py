"""Calling models through a proxy server, and serving as one: upstream's proxy protocol.

* :func:`stream_proxy` — a stream function that sends each model call to a proxy server
  (``POST {proxy_url}/api/stream``) and rebuilds the reply from its event lines. It works with
  the servers of upstream's ``streamProxy`` and with :func:`create_proxy_app`; it sends the
  request body of upstream 1.6.0, or of 0.73.1 with ``wire="0.73"`` (:data:`ProxyWire`).
  :class:`ProxyStream` binds it to one proxy's address and token.
* :func:`create_proxy_app` — an ASGI app serving that protocol for any stream function: the
  server holds the API keys, clients hold only its Bearer token. It takes the request bodies of
  both eras; the TypeScript ``streamProxy`` of pi-agent-core 1.6.0 and 0.73.1 works against it.

Serving needs an ASGI server such as hypercorn (the ``server`` extra); importing this module does
not.
"""

from __future__ import annotations

from .._public import publish_module_names
from ._client import ProxyStream, stream_proxy
from ._server import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_JSON_ITEMS,
    ProxyApp,
    create_proxy_app,
)
from ._wire import ProxyWire

__all__ = (
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_JSON_ITEMS",
    "ProxyApp",
    "ProxyStream",
    "ProxyWire",
    "create_proxy_app",
    "stream_proxy",
)

publish_module_names(globals(), __all__, __name__)
