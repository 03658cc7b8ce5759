"""Hypothesis strategies for pi_core's data classes, for any test that needs random values.

Every value drawn here survives JSON: integers stay within JavaScript's safe range, floats are
finite, free-form values (tool arguments, details, schemas) are plain JSON, and a context's tools
are plain :class:`Tool` objects. So ``loads(dumps(x), type(x)) == x`` holds for all of them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

import pi_core as pc

__all__ = [
    "agent_contexts",
    "agent_event_strategies",
    "agent_events",
    "agent_tool_results",
    "assistant_contents",
    "assistant_message_event_strategies",
    "assistant_message_events",
    "assistant_messages",
    "contexts",
    "image_contents",
    "json_objects",
    "json_values",
    "messages",
    "model_costs",
    "models",
    "system_messages",
    "text_contents",
    "thinking_contents",
    "tool_calls",
    "tool_references",
    "tool_result_contents",
    "tool_result_messages",
    "tools",
    "usage_costs",
    "usages",
    "user_messages",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer a JavaScript number holds exactly; the TypeScript side must read ours."""

texts = st.text(max_size=20)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
optional_texts = st.none() | texts
timestamps = st.integers(min_value=0, max_value=MAX_SAFE_INTEGER)
token_counts = st.integers(min_value=0, max_value=10**9)
amounts = st.floats(allow_nan=False, allow_infinity=False)
optional_counts = st.none() | token_counts
durations = st.none() | st.floats(min_value=0, max_value=1e9, allow_nan=False)

json_scalars: st.SearchStrategy[Any] = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | amounts
    | texts
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
json_objects: st.SearchStrategy[dict[str, Any]] = st.dictionaries(texts, json_values, max_size=3)

# --- content blocks -----------------------------------------------------------------------------

text_contents: st.SearchStrategy[pc.TextContent] = st.builds(pc.TextContent, texts, optional_texts)
thinking_contents: st.SearchStrategy[pc.ThinkingContent] = st.builds(
    pc.ThinkingContent, texts, optional_texts, st.booleans()
)
image_contents: st.SearchStrategy[pc.ImageContent] = st.builds(
    pc.ImageContent,
    st.binary(max_size=12).map(lambda raw: raw.hex()),
    st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]),
)
tool_calls: st.SearchStrategy[pc.ToolCall] = st.builds(
    pc.ToolCall, names, names, json_objects, optional_texts, optional_texts, optional_texts
)
assistant_contents: st.SearchStrategy[pc.TextContent | pc.ThinkingContent | pc.ToolCall] = (
    text_contents | thinking_contents | tool_calls
)
tool_result_contents: st.SearchStrategy[pc.TextContent | pc.ImageContent] = (
    text_contents | image_contents
)

# --- usage and messages -------------------------------------------------------------------------

usage_costs: st.SearchStrategy[pc.UsageCost] = st.builds(
    pc.UsageCost, amounts, amounts, amounts, amounts, amounts, st.none() | st.booleans()
)
usages: st.SearchStrategy[pc.Usage] = st.builds(
    pc.Usage,
    token_counts,
    token_counts,
    token_counts,
    token_counts,
    token_counts,
    usage_costs,
    optional_counts,
    optional_counts,
)
stop_reasons: st.SearchStrategy[pc.StopReason] = st.sampled_from(
    ["stop", "length", "toolUse", "error", "aborted", "pending", "deferred"]
)
thinking_levels: st.SearchStrategy[pc.ThinkingLevel | None] = st.none() | st.sampled_from(
    ["off", "minimal", "low", "medium", "high", "xhigh", "max"]
)

user_messages: st.SearchStrategy[pc.UserMessage] = st.builds(
    pc.UserMessage, texts | st.lists(tool_result_contents, max_size=3), timestamps
)
assistant_messages: st.SearchStrategy[pc.AssistantMessage] = st.builds(
    pc.AssistantMessage,
    st.lists(assistant_contents, max_size=3),
    names,
    names,
    names,
    usages,
    stop_reasons,
    optional_texts,
    optional_texts,
    optional_texts,
    timestamps,
    optional_texts,
    thinking_levels,
    optional_texts,
    durations,
)
tool_result_messages: st.SearchStrategy[pc.ToolResultMessage] = st.builds(
    pc.ToolResultMessage,
    names,
    names,
    st.lists(tool_result_contents, max_size=3),
    json_values,
    st.booleans(),
    timestamps,
    st.none() | usages,
    st.none() | st.fixed_dictionaries({"calls": st.just([]), "complete": st.booleans()}),
    durations,
)
tool_references: st.SearchStrategy[pc.ToolReference] = st.builds(pc.ToolReference, names)
system_messages: st.SearchStrategy[pc.SystemMessage] = st.builds(
    pc.SystemMessage,
    texts | st.lists(text_contents, max_size=2),
    st.none() | st.dictionaries(names, optional_texts, max_size=3),
    st.none() | st.lists(st.builds(pc.Tool, names, texts, json_objects), max_size=2),
    st.none() | st.lists(tool_references, max_size=2),
    timestamps,
)
messages: st.SearchStrategy[pc.Message] = (
    system_messages | user_messages | assistant_messages | tool_result_messages
)

# --- models, tools, contexts --------------------------------------------------------------------

model_costs: st.SearchStrategy[pc.ModelCost] = st.builds(
    pc.ModelCost, amounts, amounts, amounts, amounts
)
models: st.SearchStrategy[pc.Model] = st.builds(
    pc.Model,
    names,
    texts,
    names,
    names,
    texts,
    st.booleans(),
    st.lists(st.sampled_from(["text", "image"]), max_size=2).map(tuple),
    model_costs,
    token_counts,
    token_counts,
    st.none() | st.dictionaries(names, texts, max_size=2),
)
tools: st.SearchStrategy[pc.Tool] = st.builds(pc.Tool, names, texts, json_objects)
contexts: st.SearchStrategy[pc.Context] = st.builds(
    pc.Context, optional_texts, st.lists(messages, max_size=3), st.lists(tools, max_size=2)
)
agent_contexts: st.SearchStrategy[pc.AgentContext] = st.builds(
    pc.AgentContext,
    texts,
    st.lists(messages, max_size=3),
    st.lists(tools, max_size=2),
)
agent_tool_results: st.SearchStrategy[pc.AgentToolResult] = st.builds(
    pc.AgentToolResult, st.lists(tool_result_contents, max_size=2), json_values, st.booleans()
)

# --- events -------------------------------------------------------------------------------------

content_indexes = st.integers(min_value=0, max_value=50)

assistant_message_event_strategies: dict[type[Any], st.SearchStrategy[Any]] = {
    pc.StreamStart: st.builds(pc.StreamStart, assistant_messages),
    **{
        cls: st.builds(cls, content_indexes, assistant_messages)
        for cls in (pc.TextStart, pc.ThinkingStart, pc.ToolCallStart)
    },
    **{
        cls: st.builds(cls, content_indexes, texts, assistant_messages)
        for cls in (pc.TextDelta, pc.TextEnd, pc.ThinkingDelta, pc.ThinkingEnd, pc.ToolCallDelta)
    },
    pc.ToolCallEnd: st.builds(pc.ToolCallEnd, content_indexes, tool_calls, assistant_messages),
    pc.StreamDone: st.builds(
        pc.StreamDone,
        st.sampled_from(["stop", "length", "toolUse", "deferred"]),
        assistant_messages,
    ),
    pc.StreamError: st.builds(
        pc.StreamError, st.sampled_from(["aborted", "error"]), assistant_messages
    ),
}
"""One strategy per :data:`AssistantMessageEvent` class."""

assistant_message_events: st.SearchStrategy[pc.AssistantMessageEvent] = st.one_of(
    *assistant_message_event_strategies.values()
)

agent_event_strategies: dict[type[Any], st.SearchStrategy[Any]] = {
    pc.AgentStart: st.just(pc.AgentStart()),
    pc.AgentEnd: st.builds(pc.AgentEnd, st.lists(messages, max_size=3)),
    pc.TurnStart: st.just(pc.TurnStart()),
    pc.TurnEnd: st.builds(
        pc.TurnEnd, assistant_messages, st.lists(tool_result_messages, max_size=2)
    ),
    pc.MessageStart: st.builds(pc.MessageStart, messages),
    pc.MessageUpdate: st.builds(pc.MessageUpdate, assistant_messages, assistant_message_events),
    pc.MessageEnd: st.builds(pc.MessageEnd, messages),
    pc.ToolExecutionStart: st.builds(pc.ToolExecutionStart, names, names, json_values),
    pc.ToolExecutionUpdate: st.builds(
        pc.ToolExecutionUpdate, names, names, json_values, agent_tool_results
    ),
    pc.ToolExecutionEnd: st.builds(
        pc.ToolExecutionEnd, names, names, agent_tool_results, st.booleans()
    ),
}
"""One strategy per :data:`AgentEvent` class."""

agent_events: st.SearchStrategy[pc.AgentEvent] = st.one_of(*agent_event_strategies.values())
