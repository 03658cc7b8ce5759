// Calls the streamProxy of pi-agent-core (the TypeScript client) against a proxy server and
// prints what happened as one JSON line.
//
//   node stream.mjs <0.73.1|1.6.0> <proxyUrl> <authToken> [reply|abort|agent]
//
// "reply" streams one reply of a context as that version's Agent would send it, and prints
// {events, result}; events lose their `partial` (the shared message, which is `result` at the
// end). "abort" does the same and aborts at the first text_delta. "agent" runs that version's
// Agent, with a weather tool, on streamProxy until it settles, and prints {events, messages}.
import { pi } from "./pi.mjs";

const [version, proxyUrl, authToken, scenario = "reply"] = process.argv.slice(2);
const { agent: core, asSent } = await pi(version);

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
const SYSTEM_PROMPT = "You are a weather bot.";
const PROMPT = "Weather in Paris and Tokyo?";
const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const weather = {
  name: "weather",
  label: "Weather",
  description: "Look up the weather",
  parameters,
  executionMode: "parallel",
  execute: async (_id, args) => ({ content: [{ type: "text", text: `sunny in ${args.city}` }], details: { city: args.city } }),
};

if (scenario === "agent") {
  const events = [];
  const agent = new core.Agent({
    initialState: { systemPrompt: SYSTEM_PROMPT, model, tools: [weather] },
    sessionId: "interop",
    streamFn: (m, context, options) => core.streamProxy(m, context, { ...options, proxyUrl, authToken }),
  });
  agent.subscribe((event) => events.push(event.type));
  await agent.prompt(PROMPT);
  console.log(JSON.stringify({ events, messages: agent.state.messages }));
} else {
  const { execute, ...declaration } = weather;
  const context = asSent({
    systemPrompt: SYSTEM_PROMPT,
    messages: [{ role: "user", content: PROMPT, timestamp: 1 }],
    tools: [declaration],
  });
  const controller = new AbortController();
  const stream = core.streamProxy(model, context, {
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
}
