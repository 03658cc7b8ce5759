"""JSON for every pi_core data class, in the camelCase shape the TypeScript original writes.

:func:`to_dict` / :func:`from_dict` convert between pi_core objects and JSON-ready dicts;
:func:`dumps` / :func:`loads` do the same over compact JSON text. The shape follows upstream:

* keys are the camelCase forms of the Python field names (``tool_call_id`` → ``toolCallId``);
* a message's ``role`` and a content block's or event's ``type`` are written first, and loading a
  union (``Message``, ``AgentMessage``, ``AgentEvent``, ``AssistantMessageEvent``, a content list)
  picks the class by them;
* optional fields that are ``None``, and the flags ``redacted`` / ``terminate`` when false, are
  left out; everything else (``isError``, ``stopReason``, ``usage`` …) is always written. Keys
  follow the field order, except that the optional ones come after the others;
* an :class:`AgentTool` is written as upstream's proxy writes one, ``{name, description,
  parameters, label, executionMode?}``, and loads back as a plain :class:`Tool`. So
  ``from_dict(to_dict(x), type(x)) == x`` holds for every data class, except for a context whose
  tools are :class:`AgentTool` objects: those come back as :class:`Tool`.

A message, content block, usage or tool keeps the JSON keys it does not model in its ``extra``
field and writes them back after its own, so that a newer writer's fields survive a round trip.

Loading is lenient where JavaScript's numbers demand it (``0`` loads into a float field as
``0.0``, ``1.0`` into an int field as ``1``, ``null`` into a float field as NaN) and strict
otherwise: a wrong kind of value is an error, never silently converted.

App-defined messages (attrs classes with a ``role`` class attribute) take part once registered with
:func:`register_message`. Every hook lives on one private cattrs converter and is generated once
per class, on first use.
"""

from __future__ import annotations

import json
import math
import re
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, overload

import attrs
import cattrs
import jiter
from cattrs.cols import list_structure_factory
from cattrs.errors import BaseValidationError, ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, override
from cattrs.gen import make_dict_unstructure_fn_from_attrs as _make_unstructure_fn
from cattrs.v import format_exception

from ._events import AgentEvent, AssistantMessageEvent
from ._exceptions import SerializationError
from ._messages import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    Message,
    SystemMessage,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from ._texts import clip
from ._tools import AgentTool, AgentToolResult

__all__ = ["dumps", "from_dict", "loads", "register_message", "to_dict", "unregister_message"]

_T = TypeVar("_T")

_UnstructureHook = Callable[[Any], Any]
_StructureHook = Callable[[Any, Any], Any]

# Upstream declares these `flag?: boolean` and sets them only when true; the other booleans
# (`isError`, `reasoning`) are required there and always written.
_OPTIONAL_FLAGS = frozenset({"redacted", "terminate"})
# A tool's own result declares `isError?` too (the message's is required).
_OPTIONAL_FLAGS_OF: dict[type[Any], frozenset[str]] = {AgentToolResult: frozenset({"is_error"})}

# The class attributes that tag a class in JSON, in the order they are looked for.
_TAG_KEYS = ("role", "type")

# The field of a data class that holds the JSON keys it does not model (see _messages._extra).
_EXTRA = "extra"

# Upstream's proxy writes no functions of a tool; the timeout, approval and replay settings are
# pi_core's own.
_AGENT_TOOL_DROPPED = (
    "execute",
    "prepare_arguments",
    "timeout",
    "requires_approval",
    "replay",
    "reconcile",
)

_BUILTIN_MESSAGES: dict[str, type[Any]] = {
    cls.role: cls for cls in (SystemMessage, UserMessage, AssistantMessage, ToolResultMessage)
}
_custom_messages: dict[str, type[Any]] = {}

# Names for error messages; a union's repr lists every member with its module.
_ALIAS_NAMES: dict[Any, str] = {
    Message: "Message",
    AgentMessage: "AgentMessage",
    AgentEvent: "AgentEvent",
    AssistantMessageEvent: "AssistantMessageEvent",
}


# --- public API ---------------------------------------------------------------------------------


def to_dict(obj: object) -> dict[str, Any]:
    """Convert a pi_core data object (or a custom message) to a JSON-ready dict.

    Args:
        obj: a message, content block, event, model, usage, tool, context or tool result.

    Returns:
        A new dict of plain JSON values with upstream's camelCase keys.

    Raises:
        TypeError: ``obj`` is not an attrs data object, or holds a custom message that is not one.
    """
    if not attrs.has(type(obj)):
        raise TypeError(f"to_dict() expects a pi_core data object, not {type(obj).__name__}")
    result: dict[str, Any] = _converter.unstructure(obj)
    return result


@overload
def from_dict(data: object, cls: type[_T]) -> _T: ...
@overload
def from_dict(data: object, cls: object) -> Any: ...
def from_dict(data: object, cls: object) -> Any:
    """Build an object of ``cls`` from JSON-ready data, as :func:`to_dict` or upstream wrote it.

    Args:
        data: a dict (for a list type such as ``list[AgentMessage]``, a list).
        cls: a pi_core data class, a union alias (``Message``, ``AgentMessage``, ``AgentEvent``,
            ``AssistantMessageEvent``), a registered custom message class, or a list of these.

    Returns:
        The new object. Keys the class does not model are kept in its ``extra`` field and
        written back by :func:`to_dict` (classes without one ignore them); missing optional
        fields take their defaults.
        Free-form values (tool arguments, details, schemas) are taken over, not copied.

    Raises:
        SerializationError: ``data`` does not describe a ``cls`` (an unknown ``role`` /
            ``type``, a missing field, a value of the wrong kind); the text lists each problem
            with its path. It is a ``ValueError``.
        TypeError: ``cls`` cannot come from JSON (an :class:`AgentTool`: its functions are not).
    """
    if isinstance(cls, type) and issubclass(cls, AgentTool):
        raise TypeError(
            "an AgentTool cannot come from JSON (its functions are not data); load a Tool"
        )
    try:
        return _converter.structure(data, cls)  # type: ignore[arg-type]
    except (BaseValidationError, ValueError, TypeError, AttributeError) as exc:
        problems = "; ".join(_problems(exc, "$", None))
        raise SerializationError(f"Cannot load {_type_name(cls)}: {problems}") from exc


def dumps(obj: object) -> str:
    """Compact JSON text of ``obj`` (see :func:`to_dict`); a list of objects gives an array.

    Non-ASCII text is written as is, and NaN and infinities as ``null``, as ``JSON.stringify``
    does.
    """
    data = _converter.unstructure(obj)
    try:
        return _encode(data)
    except ValueError:
        # Only a non-finite float gets here; the rewrite stays off the common path.
        return _encode(_finite(data))


@overload
def loads(text: str | bytes, cls: type[_T]) -> _T: ...
@overload
def loads(text: str | bytes, cls: object) -> Any: ...
def loads(text: str | bytes, cls: object) -> Any:
    """Parse JSON text and build an object of ``cls`` from it (see :func:`from_dict`).

    Raises:
        SerializationError: the text is not JSON, or does not describe a ``cls`` (a
            ``ValueError``).
    """
    try:
        data = jiter.from_json(text.encode() if isinstance(text, str) else text)
    except ValueError as exc:
        raise SerializationError(f"Cannot load {_type_name(cls)}: invalid JSON: {exc}") from exc
    return from_dict(data, cls)


def register_message(role: str, cls: type[Any]) -> None:
    """Let custom messages of ``cls`` round-trip wherever an ``AgentMessage`` may appear.

    ``cls`` must be an attrs class whose ``role`` class attribute (not a field) is ``role``. It is
    written like the built-in messages (``role`` first, camelCase keys) and loaded by its role.
    Registering a role again replaces its class.

    Raises:
        ValueError: ``role`` is built in, or ``cls.role`` is not ``role``.
        TypeError: ``cls`` is not an attrs class.
    """
    if role in _BUILTIN_MESSAGES:
        raise ValueError(f"the message role {role!r} is built in and cannot be registered")
    if not (isinstance(cls, type) and attrs.has(cls)):
        raise TypeError(f"register_message() needs an attrs class, not {cls!r}")
    if _tag_of(cls) != ("role", role):
        raise ValueError(f"{cls.__name__} needs the class attribute role = {role!r}, not a field")
    _custom_messages[role] = cls


def unregister_message(role: str) -> None:
    """Forget the custom message class of ``role``; unknown roles are ignored."""
    _custom_messages.pop(role, None)


# --- scalars --------------------------------------------------------------------------------------
# cattrs' defaults call int() / float() / str() / bool() on anything; these accept only what a JSON
# parser gives for such a field, so bad data fails loudly instead of becoming "5" or True.


def _structure_int(value: Any, _: object) -> int:
    if type(value) is int:
        return value
    # JavaScript has one number type; an integral float is an integer that went through it.
    if type(value) is float and value.is_integer():
        return int(value)
    raise ValueError(f"expected an integer, got {_preview(value)}")


def _structure_float(value: Any, _: object) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    if value is None:  # JSON.stringify writes NaN and the infinities as null
        return math.nan
    raise ValueError(f"expected a number, got {_preview(value)}")


def _structure_str(value: Any, _: object) -> str:
    if type(value) is str:
        return value
    raise ValueError(f"expected a string, got {_preview(value)}")


def _structure_bool(value: Any, _: object) -> bool:
    if value is True or value is False:
        return value
    raise ValueError(f"expected a boolean, got {_preview(value)}")


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _literal(tp: Any) -> _StructureHook:
    values = get_args(tp)
    # Keyed by type too, so that True does not pass for 1, nor 1 for 1.0.
    allowed = frozenset((type(value), value) for value in values)

    def structure(value: Any, _: object) -> Any:
        try:
            if (type(value), value) in allowed:
                return value
        except TypeError:  # unhashable: a list or an object is never a literal
            pass
        raise ValueError(f"expected one of {', '.join(map(repr, values))}, got {_preview(value)}")

    return structure


# --- attrs classes ------------------------------------------------------------------------------


def _camel(name: str) -> str:
    """``tool_call_id`` → ``toolCallId``: upstream's key for a Python field name."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _tag_of(cls: type[Any]) -> tuple[str, str] | None:
    """The ``(key, value)`` written first for ``cls``: a ``role`` or ``type`` class attribute."""
    fields = attrs.fields_dict(cls)
    for key in _TAG_KEYS:
        value = getattr(cls, key, None)
        if isinstance(value, str) and key not in fields:
            return key, value
    return None


def _field_overrides(cls: type[Any]) -> dict[str, Any]:
    """cattrs overrides of every field: its camelCase key, and left out when optional and unset."""
    overrides: dict[str, Any] = {}
    flags = _OPTIONAL_FLAGS | _OPTIONAL_FLAGS_OF.get(cls, frozenset())
    for field in attrs.fields(cls):
        optional = field.default is None or field.name in flags
        overrides[field.name] = override(
            rename=_camel(field.name), omit_if_default=True if optional else None
        )
    return overrides


def _unstructure_attrs(cls: type[Any], converter: cattrs.Converter) -> _UnstructureHook:
    """Generate the unstructure hook of ``cls`` once: camelCase keys, tag first, None left out."""
    attrs.resolve_types(cls)
    fields = list(attrs.fields(cls))
    overrides = _field_overrides(cls)
    if issubclass(cls, AgentTool):
        overrides.update({name: override(omit=True) for name in _AGENT_TOOL_DROPPED})
    tag = _tag_of(cls)
    if tag is not None:
        key, value = tag
        if not fields:
            return lambda _: {key: value}
        # A pseudo-field read from the class attribute puts the tag first in the generated dict
        # literal, instead of copying every result into a new dict.
        pseudo = fields[0].evolve(name=key, default=attrs.NOTHING, type=str, alias=key, init=True)
        fields.insert(0, pseudo)
        overrides[key] = override(rename=key)
    if _EXTRA not in overrides:
        return _make_unstructure_fn(fields, cls, converter, **overrides)
    overrides[_EXTRA] = override(omit=True)
    generated = _make_unstructure_fn(fields, cls, converter, **overrides)

    def unstructure(obj: Any) -> Any:
        data = generated(obj)
        extra = obj.extra
        if extra:
            # Written after the modelled keys; a modelled key always wins over a kept one.
            for name, item in extra.items():
                if name not in data:
                    data[name] = _unstructure_any(item)
        return data

    return unstructure


def _structure_attrs(cls: type[Any], converter: cattrs.Converter) -> _StructureHook:
    """Generate the structure hook of ``cls`` once; the tag is ignored like any unknown key."""
    attrs.resolve_types(cls)
    overrides = _field_overrides(cls)
    if issubclass(cls, AgentContext):
        # Declared list[Any] so that a run can hold AgentTools; JSON gives back plain Tools.
        overrides["tools"] = override(rename="tools", struct_hook=_structure_tools)
    keeps_extra = _EXTRA in overrides
    if keeps_extra:
        overrides[_EXTRA] = override(omit=True)
    generated = make_dict_structure_fn(cls, converter, **overrides)
    if not keeps_extra:

        def structure(data: Any, _: object) -> Any:
            # Without this a string or list reaches the generated code and fails as a missing
            # field.
            if type(data) is not dict and not isinstance(data, Mapping):
                raise ValueError(f"expected an object for {cls.__name__}, got {_preview(data)}")
            return generated(data, cls)

        return structure

    known = frozenset(
        [_camel(field.name) for field in attrs.fields(cls) if field.name != _EXTRA]
        + [tag[0] for tag in [_tag_of(cls)] if tag is not None]
    )

    def structure_keeping_extra(data: Any, _: object) -> Any:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise ValueError(f"expected an object for {cls.__name__}, got {_preview(data)}")
        obj = generated(data, cls)
        if not known.issuperset(data):
            extra = {key: value for key, value in data.items() if key not in known}
            if extra:
                object.__setattr__(obj, _EXTRA, extra)  # frozen classes (Tool) too
        return obj

    return structure_keeping_extra


def _unstructure_tool(_: Any, converter: cattrs.Converter) -> _UnstructureHook:
    """A Context's tools are declared Tool but are often AgentTools, which upstream writes with
    their label and execution mode: go by the runtime class."""
    plain = _unstructure_attrs(Tool, converter)
    return lambda tool: plain(tool) if type(tool) is Tool else converter.unstructure(tool)


def _structure_tools(data: Any, _: object) -> list[Tool]:
    tools: list[Tool] = _converter.structure(data, list[Tool])
    return tools


# --- free-form values and containers ---------------------------------------------------------
# cattrs would dispatch on every element's class through its generic machinery; these hooks are
# what makes a streaming event cheap to write (tool arguments and details are free-form JSON).

_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _unstructure_any(value: Any) -> Any:
    """A JSON copy of a free-form value: tool arguments, details, schemas."""
    cls = type(value)
    if cls in _JSON_SCALARS:
        return value
    if cls is dict:
        return {key: _unstructure_any(item) for key, item in value.items()}
    if cls is list:
        return [_unstructure_any(item) for item in value]
    return _converter.unstructure(value)


def _is_list(tp: Any) -> bool:
    return get_origin(tp) is list


def _strict_list(tp: Any, converter: cattrs.Converter) -> _StructureHook:
    """cattrs' list hook, for JSON arrays only: it would read an object's keys or a string's
    characters as the items."""
    structure = list_structure_factory(tp, converter)

    def hook(data: Any, _: object) -> list[Any]:
        if type(data) is not list and type(data) is not tuple:
            raise ValueError(f"expected a list, got {_preview(data)}")
        items: list[Any] = structure(data, tp)
        return items

    return hook


def _is_list_or_dict(tp: Any) -> bool:
    return get_origin(tp) in (list, dict)


def _unstructure_list_or_dict(tp: Any, converter: cattrs.Converter) -> _UnstructureHook:
    item_hook = converter.get_unstructure_hook(get_args(tp)[-1])
    if get_origin(tp) is list:
        return lambda items: [item_hook(item) for item in items]
    return lambda mapping: {key: item_hook(item) for key, item in mapping.items()}


# --- unions ---------------------------------------------------------------------------------------


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _is_tagged_union(tp: Any) -> bool:
    """A union of attrs classes that all carry a tag under the same key (``role`` or ``type``)."""
    members = get_args(tp) if _is_union(tp) else ()
    if not all(isinstance(m, type) and attrs.has(m) for m in members):
        return False
    keys = {tag[0] if (tag := _tag_of(m)) else None for m in members}
    return len(keys) == 1 and None not in keys


def _tagged_union(tp: Any, converter: cattrs.Converter) -> _StructureHook:
    """Structure a tagged union by its tag, with each member's own generated hook."""
    key = ""
    hooks: dict[str, tuple[_StructureHook, type[Any]]] = {}
    for member in get_args(tp):
        key, value = _tag_of(member) or ("", "")  # never empty: checked by _is_tagged_union
        hooks[value] = (converter.get_structure_hook(member), member)
    what = "message role" if key == "role" else "type"

    def structure(data: Any, _: object) -> Any:
        tag = _read_tag(data, key)
        entry = hooks.get(tag) if type(tag) is str else None
        if entry is None:
            expected = ", ".join(map(repr, hooks))
            raise ValueError(f"unknown {what} {_preview(tag)} (expected one of {expected})")
        return entry[0](data, entry[1])

    return structure


def _unstructure_tagged_union(tp: Any, converter: cattrs.Converter) -> _UnstructureHook:
    """Unstructure by the runtime class, with a dict lookup instead of cattrs' dispatch."""
    hooks = {member: converter.get_unstructure_hook(member) for member in get_args(tp)}

    def unstructure(obj: Any) -> Any:
        hook = hooks.get(type(obj))
        return hook(obj) if hook is not None else converter.unstructure(obj)

    return unstructure


def _is_str_or_list(tp: Any) -> bool:
    """``str | list[...]``: the content of a UserMessage."""
    members = get_args(tp) if _is_union(tp) else ()
    return len(members) == 2 and members[0] is str and get_origin(members[1]) is list


def _str_or_list(tp: Any, converter: cattrs.Converter) -> _StructureHook:
    list_type = get_args(tp)[1]
    list_hook = converter.get_structure_hook(list_type)

    def structure(data: Any, _: object) -> Any:
        if type(data) is str:
            return data
        if type(data) is not list:
            raise ValueError(f"expected a string or a list, got {_preview(data)}")
        return list_hook(data, list_type)

    return structure


def _unstructure_str_or_list(tp: Any, converter: cattrs.Converter) -> _UnstructureHook:
    list_hook = converter.get_unstructure_hook(get_args(tp)[1])
    return lambda value: value if type(value) is str else list_hook(value)


def _structure_agent_message(data: Any, _: object) -> Any:
    """A built-in message, or a custom one by its registered role."""
    role = _read_tag(data, "role")
    cls = _BUILTIN_MESSAGES.get(role) or _custom_messages.get(role)
    if cls is None:
        raise ValueError(
            f"unknown message role {_preview(role)} (custom roles need register_message())"
        )
    return _converter.structure(data, cls)


def _unstructure_agent_message(message: Any) -> Any:
    if not attrs.has(type(message)):
        role = getattr(message, "role", None)
        raise TypeError(
            f"cannot serialize the custom message {type(message).__name__} (role {role!r}): "
            "custom messages must be attrs classes"
        )
    return _converter.unstructure(message, type(message))


def _read_tag(data: Any, key: str) -> Any:
    try:
        return data[key]
    except (KeyError, TypeError):
        what = (
            f"the {key!r} key in"
            if isinstance(data, Mapping)
            else f"an object with a {key!r} key, got"
        )
        raise ValueError(f"expected {what} {_preview(data)}") from None


# --- errors -------------------------------------------------------------------------------------


def _problems(exc: BaseException, path: str, expected: Any) -> list[str]:
    """Each problem of a (nested) cattrs validation error, with its path in JSON keys."""
    steps: list[tuple[BaseException, str, Any]] = []
    if isinstance(exc, ClassValidationError):
        in_fields, others = exc.group_exceptions()
        steps += [(sub, f"{path}.{_camel(note.name)}", note.type) for sub, note in in_fields]
    elif isinstance(exc, IterableValidationError):
        in_items, others = exc.group_exceptions()
        steps += [(sub, f"{path}[{note.index!r}]", note.type) for sub, note in in_items]
    else:
        return [f"{_describe(exc, expected)} @ {path}"]
    steps += [(sub, path, None) for sub in others]
    return [problem for sub, at, tp in steps for problem in _problems(sub, at, tp)]


def _describe(exc: BaseException, expected: Any) -> str:
    # Our own hooks' texts say what was wrong; cattrs' generic wording would hide it.
    if isinstance(exc, ValueError) and exc.args and isinstance(exc.args[0], str):
        return exc.args[0]
    return format_exception(exc, expected)


def _type_name(cls: object) -> str:
    # The origin test rules out list[X], which on Python 3.10 passes for a class.
    if isinstance(cls, type) and getattr(cls, "__origin__", None) is None:
        return cls.__name__
    if _is_union(cls) and cls in _ALIAS_NAMES:
        return _ALIAS_NAMES[cls]
    return re.sub(r"(?:\w+\.)+", "", repr(cls))  # drop module paths: list[UserMessage | ...]


def _preview(value: object) -> str:
    return clip(repr(value), 60)


# --- JSON text ------------------------------------------------------------------------------------

# check_circular costs a lookup per container, and unstructured data is always a fresh tree.
_encode = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, check_circular=False, separators=(",", ":")
).encode


def _finite(value: Any) -> Any:
    """A copy of JSON data with NaN and the infinities replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# --- the converter ------------------------------------------------------------------------------


def _make_converter() -> cattrs.Converter:
    """The converter with every hook pi_core needs; cattrs consults the last registration first."""
    converter = cattrs.Converter(unstruct_collection_overrides={tuple: list})
    for scalar, hook in (
        (int, _structure_int),
        (float, _structure_float),
        (str, _structure_str),
        (bool, _structure_bool),
    ):
        converter.register_structure_hook(scalar, hook)
    converter.register_structure_hook_factory(_is_list, _strict_list)
    converter.register_structure_hook_factory(_is_literal, _literal)
    converter.register_unstructure_hook_factory(attrs.has, _unstructure_attrs)
    converter.register_structure_hook_factory(attrs.has, _structure_attrs)
    converter.register_unstructure_hook_factory(lambda t: t is Tool, _unstructure_tool)
    converter.register_unstructure_hook_func(lambda t: t is Any, _unstructure_any)
    converter.register_unstructure_hook_factory(_is_list_or_dict, _unstructure_list_or_dict)
    converter.register_structure_hook_factory(_is_tagged_union, _tagged_union)
    converter.register_unstructure_hook_factory(_is_tagged_union, _unstructure_tagged_union)
    converter.register_structure_hook_factory(_is_str_or_list, _str_or_list)
    converter.register_unstructure_hook_factory(_is_str_or_list, _unstructure_str_or_list)
    converter.register_structure_hook_func(lambda t: t == AgentMessage, _structure_agent_message)
    converter.register_unstructure_hook_func(
        lambda t: t == AgentMessage, _unstructure_agent_message
    )
    return converter


_converter = _make_converter()
