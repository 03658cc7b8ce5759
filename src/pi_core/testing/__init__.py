"""Tools for testing agents built on pi_core: event-grammar and transcript checks.

Needs the ``testing`` extra (hypothesis) for the strategies.
"""

from __future__ import annotations

from ._grammar import EventGrammarError, TranscriptError, check_event_grammar, check_transcript

__all__ = ("EventGrammarError", "TranscriptError", "check_event_grammar", "check_transcript")
