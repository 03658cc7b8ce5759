"""The page: ``static/index.html`` with its script and style put inline, read once."""

from __future__ import annotations

import functools
import html
from importlib.resources import files

__all__ = ["page_html"]


@functools.cache
def _parts() -> tuple[str, str, str]:
    static = files(__package__).joinpath("static")
    return tuple(  # type: ignore[return-value]
        static.joinpath(name).read_text(encoding="utf-8")
        for name in ("index.html", "app.css", "app.js")
    )


def page_html(title: str) -> str:
    """The whole page: one document, so that a token-protected server needs one request."""
    page, style, script = _parts()
    # The script and style are ours; only the title is escaped (it is the server's setting).
    return (
        page.replace("{{title}}", html.escape(title))
        .replace("/*{{style}}*/", style)
        .replace("/*{{script}}*/", script.replace("</script", "<\\/script"))
    )
