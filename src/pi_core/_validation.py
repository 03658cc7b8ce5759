"""Tool-argument validation: coercion in three passes, a cached fastjsonschema check, and one
error line per failing field.

:func:`validate_tool_arguments` runs on every tool call. Everything that depends only on the
schema (the compiled check) is built once and cached; a call copies the arguments, coerces the
copy (:mod:`pi_core._schema_coerce` says how) and runs one compiled check. Only a failed check
walks the schema again to say what is wrong (:mod:`pi_core._schema_explain`).

A call whose arguments could not even be read as a JSON object (``arguments_error``) is refused
before any of this, with the reason the reader gave.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol, cast

from fastjsonschema import JsonSchemaException, JsonSchemaValueException

from ._exceptions import ToolArgumentsError
from ._messages import ToolCall
from ._schema_check import check_for, remember, validation_failed_text, without_dangling_refs
from ._schema_coerce import Coercer
from ._schema_explain import explain

__all__ = ["validate_tool_arguments"]


class ToolLike(Protocol):
    """What :func:`validate_tool_arguments` needs of a tool."""

    @property
    def name(self) -> str: ...  # pragma: no cover - protocol

    @property
    def parameters(self) -> Any: ...  # pragma: no cover - protocol


def validate_tool_arguments(tool: ToolLike, tool_call: ToolCall) -> dict[str, Any]:
    """Coerce and validate a tool call's arguments against ``tool.parameters``.

    Args:
        tool: anything with ``.name`` and ``.parameters`` (a JSON Schema dict).
        tool_call: the call whose ``arguments`` are checked; they are never mutated.

    Returns:
        A coerced deep copy of the arguments, never the input object. (A non-object value that
        the schema explicitly accepts is returned as it is coerced.)

    Raises:
        ToolArgumentsError: ``Validation failed for tool "<name>":``, one line per failing
            field, then the arguments as received; ``Invalid arguments for tool "<name>": …``
            when the call carries an ``arguments_error``; also when the schema itself cannot be
            compiled.
    """
    if tool_call.arguments_error:
        raise ToolArgumentsError(
            f'Invalid arguments for tool "{tool_call.name}": {tool_call.arguments_error}'
        )
    plan = _plan_for(tool)
    args = tool_call.arguments
    coerced = plan.coerce(_clone(args))
    try:
        plan.check(coerced)
    except JsonSchemaValueException:
        issues = explain(plan.schema, coerced)
        raise ToolArgumentsError(validation_failed_text(tool_call.name, issues, args)) from None
    # A dict whenever the schema asks for an object, which a tool's schema always does.
    return cast("dict[str, Any]", coerced)


# --- copying -------------------------------------------------------------------------------------

_ATOMS = frozenset({str, int, float, bool, type(None)})


def _clone(value: Any) -> Any:
    """A deep copy of a JSON value, so that neither coercion nor the tool can change the call
    in the transcript."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: _clone(item) for key, item in value.items()}
    if kind is list:
        return [_clone(item) for item in value]
    return copy.deepcopy(value)


# --- the per-schema plan (the compiled check) and its cache -----------------------------


class _Plan:
    """Everything validation needs of one schema, built once."""

    __slots__ = ("check", "coerce", "schema")

    def __init__(self, schema: Any) -> None:
        self.schema = without_dangling_refs(schema)
        self.check = check_for(self.schema)
        self.coerce = Coercer(self.schema)


# Tools keep their schema object for life, so identity is the cheap key of the hot path; the
# entry holds the schema, which keeps its id from being reused while the entry exists.
_plans: dict[int, tuple[Any, _Plan]] = {}


def _plan_for(tool: ToolLike) -> _Plan:
    schema = tool.parameters
    entry = _plans.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    try:
        plan = _Plan(schema)
    except JsonSchemaException as exc:
        raise ToolArgumentsError(
            f'Invalid parameters schema for tool "{tool.name}": {exc}'
        ) from exc
    remember(_plans, id(schema), (schema, plan))
    return plan
