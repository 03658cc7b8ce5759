"""Sessions: a conversation kept on disk as it grows, in the Pi coding agent's session format,
and compaction, which keeps it inside the model's context window.

* :class:`SessionFile` creates or opens a session file, appends entries to it crash-safely under a
  writer's lock, moves between its branches, and gives :meth:`~SessionFile.messages`, the
  transcript the coding agent would send a model from the branch in use.
* :func:`record` appends every message an Agent's runs add, and each compaction it makes.
* :func:`estimate_tokens` and :func:`compact`; :class:`CompactionPolicy` makes an Agent compact
  by itself (``Agent(compaction=CompactionPolicy())``).

A session is resumed by giving its messages to a new Agent::

    session = SessionFile.open("chat.jsonl")
    agent = Agent(model="openai/gpt-4o-mini", messages=session.messages())
    record(agent, session)
"""

from __future__ import annotations

from .. import Compaction, CompactionError, CompactionPolicy, compact, estimate_tokens
from .._public import publish_module_names
from ._file import SessionFile
from ._read import MAX_LINE_BYTES, SESSION_VERSION, SessionFileError
from ._record import record

__all__ = [
    "MAX_LINE_BYTES",
    "SESSION_VERSION",
    "Compaction",
    "CompactionError",
    "CompactionPolicy",
    "SessionFile",
    "SessionFileError",
    "compact",
    "estimate_tokens",
    "record",
]

publish_module_names(globals(), __all__, __name__)
