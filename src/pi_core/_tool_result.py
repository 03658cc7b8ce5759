"""What a tool's return value becomes: the :class:`AgentToolResult` the model reads.

An ``AgentToolResult`` is used as it is and a ``str`` is one text block (the loop checks those
two first, on its own). Any other value — a dict, a list, a number, a bool, ``None``, an attrs or
dataclass instance, and whatever these hold — is sent as JSON text in one text block, on one
line, with the value itself kept in ``details`` for the application. Classes are unstructured by
the converter that structures tool arguments (``_tool_schema.converter``), so a class reads the
same whether the model sends it or gets it back: field names as written, dates as ISO text, sets
as arrays. A value that JSON cannot carry (an arbitrary object, bytes, a cycle, ``nan``) raises
``TypeError``, which the loop makes the call's error result.
"""

from __future__ import annotations

import json

from ._messages import TextContent
from ._tool_schema import converter
from ._tools import AgentToolResult

__all__ = ["json_result"]


def json_result(tool_name: str, value: object) -> AgentToolResult:
    """The result of a tool that returned ``value``: its JSON text, and ``value`` as details.

    Raises:
        TypeError: ``value`` cannot be written as JSON; the message says what to return instead.
    """
    try:
        text = json.dumps(converter.unstructure(value), ensure_ascii=False, allow_nan=False)
    except Exception as exc:  # json's TypeError / ValueError, a cycle's RecursionError, a hook's
        raise TypeError(
            f"Tool {tool_name} returned {type(value).__name__}, which cannot be sent to the model "
            f"as JSON ({exc}); return a str, an AgentToolResult or a JSON value"
        ) from exc
    return AgentToolResult([TextContent(text)], value)
