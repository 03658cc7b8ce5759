"""Keeping secrets out of reprs and error texts: credential headers, tokens, keys in text.

A repr ends up in logs, tracebacks and bug reports; an error text may be sent to a proxy's
clients. Neither may show an API key or a bearer token.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

import anyio
import anyio.to_thread

__all__ = [
    "MAX_REDACTED_CHARS",
    "OFF_LOOP_CHARS",
    "REDACTED",
    "header_secrets",
    "headers_repr",
    "is_secret_header",
    "redact_credentials",
    "redact_credentials_off_loop",
    "redacted_headers",
    "secret_repr",
]

REDACTED = "[redacted]"

_SECRET_HEADER = re.compile(r"auth|key|token|secret|passw|cookie|signature|credential", re.I)
"""Header names whose values carry credentials: Authorization, x-api-key, api-key, Cookie …"""

MAX_REDACTED_CHARS = 64 * 1024
"""The longest text :func:`redact_credentials` reads: the rest is cut off (an error text longer
than that is noise), so redacting costs a bounded time whatever a server sends."""

_MIN_SECRET_CHARS = 8
"""A known secret shorter than this is not searched for: no real key is so short, and replacing
every occurrence of a short string would garble the text."""

OFF_LOOP_CHARS = 4 * 1024
"""From this length on, :func:`redact_credentials_off_loop` redacts in a worker thread."""

# Every pattern is linear in the text it scans, by construction: after an optional one-character
# look-behind, it is a literal start (a word from a fixed list) followed by single character sets,
# each repeated a bounded number of times or, only as the pattern's last element, without bound.
# An attempt that fails has then examined a bounded number of characters, and one that succeeds
# consumes what it examined, so no backtracking can multiply the work (the test of this module
# checks that shape on the parsed patterns).
_NOT_AFTER_WORD = r"(?<![A-Za-z0-9])"
_TOKEN = r"[A-Za-z0-9_\-]"
_KEY_PREFIXES = (
    r"sk-ant-|sk-proj-|sk-svcacct-|sk-admin-|sk-or-|sk-|sk_live_|sk_test_|rk_live_|rk_test_"
    r"|AIza|gsk_|xai-|hf_|gh[pousr]_|github_pat_|glpat-|xox[abposre]-|r8_|pplx-|csk-|npm_"
    r"|pypi-|dop_v1_"
)
"""How API keys and tokens start: OpenAI (also project, service-account and admin keys),
Anthropic, OpenRouter, DeepSeek and most OpenAI-compatible servers, Stripe, Google, Groq, xAI,
Hugging Face, GitHub (classic and fine-grained), GitLab, Slack, Replicate, Perplexity, Cerebras,
npm, PyPI and DigitalOcean."""

_KEY_WORDS = r"key|token|secret|password|passwd|pwd|signature|sig|auth|credential"
"""Names whose value is a credential, also as the end of a longer name (``api_key``,
``x-goog-api-key``, ``access_token``, ``client_secret``)."""

_VALUE = r"[A-Za-z0-9_+/~\-][^\s'\"&,;<>(){}\[\]]*"
"""The value of a pair: it starts with a letter, a digit or a token sign, so ``api_key=...``
in a hint stays as it is."""

PATTERNS: dict[str, str] = {
    # A bytes literal: how h11 and httpcore quote the header value they refuse.
    "literal": _NOT_AFTER_WORD + r"""b(?:'[^'\n]{0,1024}'|"[^"\n]{0,1024}")""",
    "scheme": _NOT_AFTER_WORD
    + r"(?:(?i:bearer)[ \t]{1,8}[A-Za-z0-9._~+/=\-]|Basic[ \t]{1,8}[A-Za-z0-9+/=]{8})"
    + r"[A-Za-z0-9._~+/=\-]*",
    # key=…, api-key: …, "token": "…", ?access_token=… (URLs, headers, JSON, assignments)
    "pair": rf"(?P<name>(?i:{_KEY_WORDS})[\"']?[ \t]{{0,4}}[:=][ \t]{{0,4}}[\"']?){_VALUE}",
    # scheme://user:password@host: the password
    "userinfo": r"(?P<user>://[^\s/@:'\"]{1,256}:)[^\s/@'\"]{1,256}@",
    "prefixed": rf"{_NOT_AFTER_WORD}(?:{_KEY_PREFIXES}){_TOKEN}{{8}}{_TOKEN}*",
    "aws": rf"{_NOT_AFTER_WORD}(?:AKIA|ASIA)[0-9A-Z]{{16}}",
    # A JSON web token: base64url of '{"', then the payload and the signature after dots.
    "jwt": rf"{_NOT_AFTER_WORD}eyJ[A-Za-z0-9_\-.]{{16}}[A-Za-z0-9_\-.]*",
}
"""The shapes of credentials in text, by name (each one's replacement: :func:`_replacement`)."""

_CREDENTIALS = re.compile("|".join(f"(?P<{kind}>{rx})" for kind, rx in PATTERNS.items()))


def is_secret_header(name: str) -> bool:
    """Whether a header of this name carries a credential (by its name, case-insensitively)."""
    return _SECRET_HEADER.search(name) is not None


def redacted_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """A copy of ``headers`` with the values of credential headers replaced."""
    if headers is None:
        return None
    return {name: REDACTED if is_secret_header(name) else value for name, value in headers.items()}


def headers_repr(headers: Mapping[str, str] | None) -> str:
    """The repr of ``headers`` without credentials (for ``attrs.field(repr=...)``)."""
    return repr(redacted_headers(headers))


def secret_repr(value: object) -> str:
    """The repr of a secret: whether there is one, never what it is."""
    return repr(None) if value is None else repr(REDACTED)


def redact_credentials(text: str, secrets: Collection[str] = ()) -> str:
    """``text`` with each of ``secrets`` (the credentials a request sent, whatever they look
    like) and what looks like a credential replaced by ``[redacted]``.

    Takes time linear in the text, of which it reads at most :data:`MAX_REDACTED_CHARS`
    characters (a longer text is cut there, an ellipsis marking the cut).
    """
    if len(text) > MAX_REDACTED_CHARS:
        text = text[: MAX_REDACTED_CHARS - 1] + "…"
    for secret in secrets:
        if len(secret) >= _MIN_SECRET_CHARS:
            text = text.replace(secret, REDACTED)
    return _CREDENTIALS.sub(_replacement, text)


async def redact_credentials_off_loop(text: str, secrets: Collection[str] = ()) -> str:
    """:func:`redact_credentials`, in a worker thread for a text of :data:`OFF_LOOP_CHARS` or more,
    so that a long error text does not hold up the other tasks of the event loop."""
    if len(text) < OFF_LOOP_CHARS:
        return redact_credentials(text, secrets)
    return await anyio.to_thread.run_sync(redact_credentials, text, secrets)


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """The credentials in ``headers``: the values of credential headers, and the token of an
    ``Authorization: Bearer <token>`` (a server that quotes a key quotes it alone)."""
    found: list[str] = []
    for name, value in headers.items():
        if is_secret_header(name):
            found.append(value)
            found.extend(value.split()[1:2])
    return found


def _replacement(match: re.Match[str]) -> str:
    kind = match.lastgroup
    if kind == "literal":
        return f"b'{REDACTED}'"
    if kind == "scheme":
        return match[0].split(None, 1)[0] + " " + REDACTED
    if kind == "pair":
        return match["name"] + REDACTED
    if kind == "userinfo":
        return match["user"] + REDACTED + "@"
    return REDACTED
