"""Sphinx configuration: MyST pages, autodoc of the public API, the furo theme.

Built with warnings as errors (``nox -s docs``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any

project = "pi_core"
author = "pi_core developers"
copyright = "pi_core developers"
try:
    release = importlib.metadata.version("pi-agent-core-py")
except importlib.metadata.PackageNotFoundError:
    release = "unknown"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# --- autodoc --------------------------------------------------------------------------------------

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_default_options = {"show-inheritance": False}
# The public type aliases are written by name in signatures instead of being expanded into unions.
autodoc_type_aliases = {
    name: f"pi_core.{name}"
    for name in (
        "AgentEvent",
        "AgentListener",
        "AgentMessage",
        "AssistantMessageEvent",
        "Message",
        "StopReason",
        "StreamFn",
        "ThinkingLevel",
        "ToolExecutionMode",
        "ToolUpdateCallback",
        "QueueMode",
    )
}


def _name_nested_aliases() -> None:
    """Write an alias nested in a generic (``Iterable[AgentMessage]``) by its name.

    Sphinx 8.2 to 9 stringify it with its repr, ``TypeAliasForwardRef('pi_core.AgentMessage')``.
    """
    try:
        from sphinx.util.inspect import TypeAliasForwardRef
    except ImportError:  # a Sphinx without the class has nothing to fix
        return
    TypeAliasForwardRef.__repr__ = lambda self: self.name  # type: ignore[method-assign]


_name_nested_aliases()

# Cross-references inside signatures are best effort: the annotations name private modules and
# third-party types that have no page here. Unresolved ones render as plain text.
nitpicky = False
# Optional dependencies are mocked only when missing, so that the reference builds in a venv
# with just the docs group installed.
autodoc_mock_imports = [
    module
    for module in ("hypothesis", "starlette", "hypercorn", "trio")
    if importlib.util.find_spec(module) is None
]

# --- html -----------------------------------------------------------------------------------------

html_theme = "furo"
html_title = f"pi_core {release}"
html_static_path: list[str] = []


# --- Google-style docstrings ----------------------------------------------------------------------


def _google_sections(
    app: Any, what: Any, name: str, obj: object, options: Any, lines: list[str]
) -> None:
    """Turn the ``Args:`` / ``Returns:`` / ``Raises:`` sections into fields, as napoleon does.

    Napoleon itself would also read the first line of every attribute and property docstring
    as ``type: description``, and this codebase writes prose there ("The live state: …").
    """
    if what in ("attribute", "data", "property"):
        return
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import GoogleDocstring

    # napoleon's own Config stands in for Sphinx's, as napoleon documents for standalone use.
    config: Any = Config(napoleon_use_rtype=False, napoleon_use_param=True)
    lines[:] = GoogleDocstring(lines, config, app, what, name, obj, options).lines()


def setup(app: Any) -> None:
    """Sphinx calls this for conf.py as for an extension."""
    app.connect("autodoc-process-docstring", _google_sections)
