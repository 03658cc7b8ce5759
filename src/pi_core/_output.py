"""A typed answer as a tool: the output tool of a type, reading a value back from its call, and
a run's attempts at it.

The model answers with a type by calling one tool, ``final_result``, whose parameters are the
type's JSON Schema. :class:`OutputSpec` holds what a run needs of an output type:

* the tool (``final_result``), offered beside the other tools; its call is validated and coerced
  exactly as any tool's arguments are (the same coercion passes and error texts), so a value
  that does not fit is the call's error result, which the model reads;
* :meth:`OutputSpec.read`: a call's value, validated, then structured into the type;
* :meth:`OutputSpec.output_of`: the value a run's messages hold, structured again from the JSON
  the output tool's result keeps as its ``details``;
* :func:`partial_output`: the output as far as a streamed reply has written it.

:class:`OutputAttempts` is the part of one run: after each turn it says whether the answer was
given, asks the model again (an invalid call, or a reply without one, costs one retry), forces
the tool on the last retry, and raises :class:`OutputError` when the retries are spent.

Types are what ``@tool`` accepts as a parameter type (attrs classes, dataclasses, TypedDict,
Enum, lists, unions, ``Annotated`` descriptions …), or a JSON Schema dict, which is checked to be
one and whose value is the validated dict. A type whose schema is not an object is wrapped: the
tool takes ``{"result": <the value>}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs
from fastjsonschema import JsonSchemaException

from ._events import AgentEvent, MessageUpdate
from ._exceptions import OutputError
from ._messages import (
    AgentContext,
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ._options import StreamOptions, ToolChoice
from ._result import RunOutcome, RunResult
from ._schema_check import check_for
from ._tool_schema import converter, schema_for
from ._tools import AgentTool, AgentToolResult
from ._validation import validate_tool_arguments
from .nursery import AbortSignal

__all__ = [
    "CALL_THE_OUTPUT_TOOL",
    "OUTPUT_PROCESSED",
    "OUTPUT_TOOL",
    "OutputAttempts",
    "OutputError",
    "OutputSpec",
    "given_output",
    "partial_output",
]

OUTPUT_TOOL: Final = "final_result"
"""The name of the tool a typed answer is given with."""
OUTPUT_PROCESSED: Final = "Final result processed."
"""The result of a valid output call."""
CALL_THE_OUTPUT_TOOL: Final = "Respond by calling the final_result tool."
"""The user message a reply that ends without the output call is answered with."""
NO_OUTPUT_CALL: Final = "the reply did not call the final_result tool"
"""The error a reply without the output call counts as."""
FORCE_OUTPUT: Final[ToolChoice] = {"name": OUTPUT_TOOL}
"""The tool choice of the last retry."""
_WRAPPED: Final = "result"
_DESCRIPTION: Final = "Give the final answer: call this once, with the answer as its arguments."


def _check_retries(_spec: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"output_retries must be an int of at least 0, not {value!r}")


@attrs.frozen
class OutputSpec:
    """What a run needs of one output type: give it as ``AgentLoopConfig(output=...)``."""

    output_type: Any
    tool: AgentTool
    """The output tool, ``final_result``."""
    wrapped: bool
    """The schema is not an object's: the value travels as ``{"result": ...}``."""
    plain_schema: bool
    """The type is a JSON Schema dict: the value is the validated JSON, not structured."""
    retries: int = attrs.field(default=2, validator=_check_retries)
    """How many more answers the model may give after one that failed."""

    @classmethod
    def of(cls, output_type: Any, retries: int = 2) -> OutputSpec | None:
        """The spec of ``output_type``; ``None`` for ``None`` and ``str`` (a plain text answer).

        Raises:
            TypeError: a type ``@tool`` cannot express, or a dict that is not a JSON Schema.
            ValueError: ``retries`` is negative or not an int.
        """
        _check_retries(None, None, retries)
        if output_type is None or output_type is str:
            return None
        plain = isinstance(output_type, Mapping)
        schema = _checked_schema(output_type) if plain else schema_for(output_type, "output_type")
        wrapped = schema.get("type") != "object"
        parameters = (
            {"type": "object", "properties": {_WRAPPED: schema}, "required": [_WRAPPED]}
            if wrapped
            else schema
        )
        description = schema.get("description")
        structure = _plain if plain else _structurer(output_type)
        tool = AgentTool(
            OUTPUT_TOOL,
            description if isinstance(description, str) and description else _DESCRIPTION,
            parameters,
            _output_execute(wrapped, structure),
            label="final result",
        )
        return cls(output_type, tool, wrapped, plain, retries)

    def read(self, call: ToolCall) -> Any:
        """The value of an output tool call: validated and coerced, then structured.

        Raises:
            ToolArgumentsError: the arguments do not fit the type (the text the model reads).
        """
        arguments = validate_tool_arguments(self.tool, call)
        return self.structure(arguments[_WRAPPED] if self.wrapped else arguments)

    def structure(self, value: Any) -> Any:
        """The validated JSON ``value`` as an instance of the output type."""
        return value if self.plain_schema else converter.structure(value, self.output_type)

    def output_of(self, messages: Sequence[AgentMessage]) -> Any:
        """The output the run of ``messages`` gave, as the output type; ``None`` if none."""
        given = given_output(messages)
        return None if given is None else self.structure(given.details)


def _plain(value: Any) -> Any:
    return value


def _structurer(output_type: Any) -> Callable[[Any], Any]:
    def structure(value: Any) -> Any:
        return converter.structure(value, output_type)

    return structure


def _output_execute(wrapped: bool, structure: Callable[[Any], Any]) -> Any:
    """The output tool's ``execute``: the arguments are validated already; structuring them
    proves the value fits the type (an exception is the call's error result). The result keeps
    the JSON value as its ``details``, which is what a transcript can carry."""

    async def execute(
        _tool_call_id: str, params: Any, _signal: AbortSignal, _on_update: Any
    ) -> AgentToolResult:
        value = params[_WRAPPED] if wrapped else params
        structure(value)
        return AgentToolResult([TextContent(OUTPUT_PROCESSED)], value)

    return execute


def _checked_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema dict, refused when it cannot be compiled (a typo is found before a run)."""
    try:
        check_for(dict(schema))
    except JsonSchemaException as exc:
        raise TypeError(f"output_type is not a valid JSON Schema: {exc}") from exc
    return dict(schema)


def given_output(messages: Sequence[AgentMessage]) -> ToolResultMessage | None:
    """The result of the last valid output call among ``messages`` (its ``details`` are the
    value as JSON); ``None`` if the model gave none."""
    for message in reversed(messages):
        if (
            isinstance(message, ToolResultMessage)
            and message.tool_name == OUTPUT_TOOL
            and not message.is_error
        ):
            return message
    return None


def partial_output(event: AgentEvent) -> dict[str, Any] | None:
    """The output tool's arguments as far as they have streamed, from a ``message_update``;
    ``None`` for other events and for replies that have not begun the output call."""
    if not isinstance(event, MessageUpdate):
        return None
    for block in event.message.content:
        if isinstance(block, ToolCall) and block.name == OUTPUT_TOOL:
            return dict(block.arguments)
    return None


class OutputAttempts:
    """One run's attempts at its typed answer, judged after each turn."""

    __slots__ = ("_clock", "failures", "last_error", "spec")

    def __init__(self, spec: OutputSpec, clock: Callable[[], int]) -> None:
        self.spec = spec
        self._clock = clock
        self.failures = 0
        self.last_error = ""

    def with_tool(self, context: AgentContext) -> AgentContext:
        """``context`` with the output tool among its tools (a copy; the caller's is kept).

        Raises:
            ValueError: another tool of the context has the output tool's name.
        """
        tools = context.tools
        if any(tool is self.spec.tool for tool in tools):
            return context
        if any(tool.name == OUTPUT_TOOL for tool in tools):
            raise ValueError(f"a tool named {OUTPUT_TOOL!r} clashes with the output tool")
        return AgentContext(context.system_prompt, context.messages, [*tools, self.spec.tool])

    def given(self, tool_results: Sequence[ToolResultMessage]) -> bool:
        """Whether the turn's batch holds a valid output call: the run ends after it."""
        return any(r.tool_name == OUTPUT_TOOL and not r.is_error for r in tool_results)

    def retry(
        self,
        message: AssistantMessage,
        tool_results: Sequence[ToolResultMessage],
        new_messages: Sequence[AgentMessage],
    ) -> UserMessage | None:
        """After a turn without a valid output call: spend a retry if the turn failed at the
        output, and return the user message to send first, if the reply did not try at all.

        A reply that called other tools and not the output tool goes on as any run does.

        Raises:
            OutputError: the retries are spent.
        """
        failed = [r for r in tool_results if r.tool_name == OUTPUT_TOOL]
        if failed:
            self._spend(_text_of(failed[-1]), new_messages)
            return None
        if any(isinstance(block, ToolCall) for block in message.content):
            return None
        self._spend(NO_OUTPUT_CALL, new_messages)
        return UserMessage([TextContent(CALL_THE_OUTPUT_TOOL)], self._clock())

    def options_for(self, options: StreamOptions) -> StreamOptions:
        """The options of the next request: the last retry forces the output tool."""
        if self.failures == self.spec.retries and self.failures:
            return attrs.evolve(options, tool_choice=FORCE_OUTPUT)
        return options

    def _spend(self, error: str, new_messages: Sequence[AgentMessage]) -> None:
        self.failures += 1
        self.last_error = error
        if self.failures > self.spec.retries:
            text = f"Output failed after {self.spec.retries} retries: {error}"
            result = RunResult(list(new_messages), text, RunOutcome.ERROR, output_failed=True)
            raise OutputError(text, result)


def _text_of(result: ToolResultMessage) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))
