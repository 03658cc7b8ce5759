"""A Starlette service that streams agent events to a browser over Server-Sent Events.

Run it:  python examples/starlette_sse.py        then open http://127.0.0.1:8000
   or:   cd examples && hypercorn --worker-class trio starlette_sse:app      (the same on trio)

Each request to ``/events?prompt=...`` runs a new agent (one per conversation: an Agent runs one
prompt at a time). The run lives exactly as long as its response (``pi_core.sse``): when the
client goes away the run is cancelled, and when the run ends the response ends.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from pi_core import (
    Agent,
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
    tool,
)
from pi_core.providers.faux import FauxProvider, faux_assistant_message, faux_text, faux_tool_call
from pi_core.sse import agent_events_response


@tool
async def count_words(text: str) -> str:
    """Count the words of a text."""
    return str(len(text.split()))


def scripted_reply(
    context: Context, options: StreamOptions, call_count: int, model: Model
) -> AssistantMessage:
    """A faux model: count the words of the prompt with the tool, then report the count."""
    last = context.messages[-1]
    if isinstance(last, ToolResultMessage):
        count = _text(last.content)
        return faux_assistant_message(f"Your message has {count} words.")
    assert isinstance(last, UserMessage)
    text = last.content if isinstance(last.content, str) else _text(last.content)
    return faux_assistant_message(
        [faux_text("Let me count."), faux_tool_call("count_words", {"text": text})],
        stop_reason="toolUse",
    )


def _text(blocks: Sequence[object]) -> str:
    return " ".join(block.text for block in blocks if isinstance(block, TextContent))


def create_app(tokens_per_second: float | None = 40.0) -> Starlette:
    """The service; ``tokens_per_second`` paces the faux model (``None``: as fast as possible)."""

    async def events(request: Request) -> Response:
        faux = FauxProvider(tokens_per_second=tokens_per_second)
        faux.set_responses([scripted_reply, scripted_reply])
        agent = Agent(model=faux.get_model(), stream_fn=faux.stream, tools=[count_words])
        return agent_events_response(agent, request.query_params.get("prompt", "Hello there"))

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    return Starlette(routes=[Route("/", page), Route("/events", events)])


PAGE = """<!doctype html>
<meta charset="utf-8"><title>pi_core over SSE</title>
<form id="form"><input id="prompt" size="60" value="How many words are in this sentence?">
<button>Ask</button></form>
<pre id="out"></pre>
<script>
form.onsubmit = (submit) => {
  submit.preventDefault();
  out.textContent = "";
  const source = new EventSource("/events?prompt=" + encodeURIComponent(prompt.value));
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
      out.textContent += event.assistantMessageEvent.delta;
    } else if (event.type === "tool_execution_start") {
      out.textContent += `\\n[${event.toolName}] ${JSON.stringify(event.args)}\\n`;
    } else if (event.type === "tool_execution_end") {
      out.textContent += `[${event.toolName}] -> ${event.result.content[0].text}\\n`;
    } else if (event.type === "agent_end") {
      source.close();  // else EventSource reconnects, which would run the agent again
      out.textContent += "\\n[done]";
    }
  };
};
</script>
"""

app = create_app()

if __name__ == "__main__":
    import asyncio

    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    config = Config()
    config.bind = ["127.0.0.1:8000"]
    asyncio.run(serve(app, config))  # type: ignore[arg-type]
