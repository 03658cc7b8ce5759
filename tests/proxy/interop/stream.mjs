// Calls pi-agent-core's own streamProxy (the TypeScript client) against a proxy server and
// prints what it rebuilt as one JSON line: {events, result}. Events lose their `partial` (the
// shared message, which is `result` at the end).
//
//   node stream.mjs <proxyUrl> <authToken> [reply|abort]
//
// "abort" aborts the request at the first text_delta.
import { streamProxy } from "@mariozechner/pi-agent-core";

const [proxyUrl, authToken, scenario = "reply"] = process.argv.slice(2);

const model = {
  id: "faux-1",
  name: "Faux Model",
  api: "faux",
  provider: "faux",
  baseUrl: "http://localhost:0",
  reasoning: false,
  input: ["text", "image"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000,
  maxTokens: 16384,
};

const context = {
  systemPrompt: "You are a weather bot.",
  messages: [{ role: "user", content: "Weather in Paris and Tokyo?", timestamp: 1 }],
  tools: [
    {
      name: "weather",
      description: "Look up the weather",
      parameters: {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
      },
      label: "Weather",
      executionMode: "parallel",
    },
  ],
};

const controller = new AbortController();
const stream = streamProxy(model, context, {
  proxyUrl,
  authToken,
  temperature: 0.5,
  sessionId: "interop",
  apiKey: "sk-never-sent",
  signal: controller.signal,
});

const events = [];
for await (const event of stream) {
  const { partial, message, error, ...rest } = event;
  events.push(rest);
  if (scenario === "abort" && event.type === "text_delta") {
    controller.abort();
  }
}
const result = await stream.result();
console.log(JSON.stringify({ events, result }));
