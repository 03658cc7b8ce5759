"""Sphinx configuration: MyST pages, autodoc of the public API, the furo theme.

Built with warnings as errors (``nox -s docs``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from typing import Any

import attrs

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
# A signature longer than this is written one parameter per line.
python_maximum_signature_line_length = 88
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


# --- attrs defaults ------------------------------------------------------------------------------

_ATTRS_DEFAULT = re.compile(r"attr_dict\['(?P<name>\w+)'\]\.default")


def _attrs_defaults(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: str | None, ret: str | None
) -> tuple[str | None, str | None] | None:
    """Show an attrs class's defaults as values: with ``autodoc_preserve_defaults`` its generated
    ``__init__`` reads ``attr_dict['x'].default``, and a factory's default reads ``NOTHING``."""
    if what != "class" or signature is None or not attrs.has(obj):
        return None
    fields = {field.name: field for field in attrs.fields(obj)}
    signature = _ATTRS_DEFAULT.sub(lambda m: _shown(fields[m["name"]].default), signature)
    for field in fields.values():
        pattern = rf"(\b{field.name}: [^=]*?) = NOTHING"
        signature = re.sub(pattern, rf"\1 = {_shown(field.default)}", signature, count=1)
    return signature, ret


def _shown(default: Any) -> str:
    """A default as a reader wants to see it: the value, or what the factory makes."""
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            return "<computed>"
        made = default.factory
        if made in (list, dict, set, tuple):
            return repr(made())
        return f"{getattr(made, '__name__', repr(made))}()"
    if callable(default) and hasattr(default, "__name__"):
        return str(default.__name__)
    return repr(default)


# --- attribute docs of published classes -------------------------------------------------------

_PUBLIC_MODULES = ("pi_core", "pi_core.testing", "pi_core.nursery", "pi_core.proxy", "pi_core.sse")


def _published_attribute_docs() -> None:
    """Let autodoc find the attribute docstrings of classes published under a public module.

    ``publish_module_names`` sets such a class's ``__module__`` to the public module, where autodoc
    then looks for the docstrings written under its fields (``Model.id`` …) and finds none: copy
    them into the public module's analyzer from the private module that defines the class.
    """
    import importlib
    import sys

    from sphinx.pycode import ModuleAnalyzer

    for public in _PUBLIC_MODULES:
        module = importlib.import_module(public)
        analyzer = ModuleAnalyzer.for_module(public)
        analyzer.analyze()
        classes = {
            cls.__qualname__
            for cls in (getattr(module, name) for name in getattr(module, "__all__", ()))
            if isinstance(cls, type) and cls.__module__ == public
        }
        private = [name for name in sys.modules if name.startswith("pi_core.") and "._" in name]
        for home_name in private:
            try:
                home = ModuleAnalyzer.for_module(home_name)
                home.analyze()
            except Exception:  # a module with no source to read
                continue
            for key, lines in home.attr_docs.items():
                if key[0] in classes:
                    analyzer.attr_docs.setdefault(key, lines)
            for key, order in home.tagorder.items():
                if key.split(".", 1)[0] in classes:
                    analyzer.tagorder.setdefault(key, order)


_published_attribute_docs()


# --- short cross-references in docstrings -----------------------------------------------------


def _resolve_short_reference(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve ``:class:`Model``` written in a submodule's docstring as ``pi_core.Model``, and
    ``:meth:`register``` in a class's docstring as that class's member, as a reader means them."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [f"pi_core.{target}"]
    if module and cls:
        candidates.insert(0, f"{module}.{cls}.{target}")
    if module:
        candidates.append(f"{module}.{target}")
    domain = env.get_domain("py")
    for candidate in candidates:
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], candidate, node, contnode
        )
        if found is not None:
            return found
    return None


def setup(app: Any) -> None:
    """Sphinx calls this for conf.py as for an extension."""
    app.connect("autodoc-process-docstring", _google_sections)
    app.connect("autodoc-process-signature", _attrs_defaults)
    app.connect("missing-reference", _resolve_short_reference)
