// A proxy server as a TypeScript program would write one on pi-ai of the given version: it
// serves POST /api/stream with pi-ai's own faux provider and writes its events as the wire's
// `data:` lines, without `partial`. It prints {"port"} once it listens, and when its stdin
// closes it prints {"bodies"} (every request body it got) and exits.
//
//   node server.mjs <0.73.1|1.6.0> <authToken>
//
// The faux model answers a request whose last message is from the user with a call of the
// first tool it was given ({"city": "Paris"}), and any other with the JSON of what it understood
// of the request: {systemPrompt, tools, roles}.
import http from "node:http";
import { pi } from "./pi.mjs";

const [version, authToken] = process.argv.slice(2);
const era = await pi(version);
const { fauxAssistantMessage, fauxToolCall } = era.ai;
const faux = era.faux({ tokenSize: { min: 3, max: 3 } });

function answer(context) {
  const understood = era.understood(context);
  const roles = context.messages.map((m) => m.role);
  if (roles.at(-1) === "user" && understood.tools.length > 0) {
    const call = fauxToolCall(understood.tools[0], { city: "Paris" }, { id: "call-1" });
    return fauxAssistantMessage([call], { stopReason: "toolUse" });
  }
  return fauxAssistantMessage(JSON.stringify({ ...understood, roles }));
}
faux.registration.setResponses(Array.from({ length: 50 }, () => answer));

/** The wire form of one event: the event without `partial`, as the proxy protocol sends it. */
function wireEvent(event) {
  switch (event.type) {
    case "toolcall_start":
      return { type: event.type, contentIndex: event.contentIndex, id: event.partial.content[event.contentIndex].id, toolName: event.partial.content[event.contentIndex].name };
    case "toolcall_end":
      // 1.6.0 sends the complete call along; 0.73.1's servers sent the index only.
      return version === "0.73.1"
        ? { type: event.type, contentIndex: event.contentIndex }
        : { type: event.type, contentIndex: event.contentIndex, toolCall: event.toolCall };
    case "text_end":
    case "thinking_end":
      return { type: event.type, contentIndex: event.contentIndex };
    case "done":
      return { type: "done", reason: event.reason, usage: event.message.usage };
    case "error":
      return { type: "error", reason: event.reason, errorMessage: event.error.errorMessage, usage: event.error.usage };
    default: {
      const { partial, ...rest } = event;
      return rest;
    }
  }
}

const bodies = [];
const server = http.createServer((request, response) => {
  let text = "";
  request.on("data", (chunk) => (text += chunk));
  request.on("end", async () => {
    if (request.headers.authorization !== `Bearer ${authToken}`) {
      response.writeHead(401, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: "Invalid bearer token" }));
      return;
    }
    const body = JSON.parse(text);
    bodies.push(body);
    response.writeHead(200, { "content-type": "text/event-stream" });
    for await (const event of faux.stream(body.model, body.context, body.options)) {
      response.write(`data: ${JSON.stringify(wireEvent(event))}\n\n`);
    }
    response.end();
  });
});
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.stdin.resume();
process.stdin.on("end", () => {
  console.log(JSON.stringify({ bodies }));
  server.close();
  process.exit(0);
});
