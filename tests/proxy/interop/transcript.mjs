// Transcripts of the TypeScript Pi's Agent, for the interchange with pi_core's JSON.
//
//   node transcript.mjs <0.73.1|1.6.0> write
//   node transcript.mjs <0.73.1|1.6.0> read <transcript.json>
//
// "write" runs that version's Agent with pi-ai's faux provider over a few turns (a system
// prompt, tools, a thinking block, a tool call and its result, a failing tool; on 1.6.0 also a
// change of tools between runs) and prints its transcript (agent.state.messages) as one JSON line.
//
// "read" gives the Agent a transcript written elsewhere, prompts once more, and prints what it
// made of it as one JSON line: {systemPrompt, tools, seen, messages}, where `seen` is what the
// model was given on that call (the roles, and the prompt and tools as that version reads them).
import { readFileSync } from "node:fs";
import { pi } from "./pi.mjs";

const [version, mode, file] = process.argv.slice(2);
const era = await pi(version);
const { fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall } = era.ai;
const faux = era.faux({ tokenSize: { min: 4, max: 4 } });
const schema = { type: "object", properties: { v: { type: "string" } }, required: ["v"] };
const tool = (name, execute) => ({ name, label: name.toUpperCase(), description: `The ${name} tool.`, parameters: schema, execute });
const echo = tool("echo", async (_id, { v }) => ({ content: [{ type: "text", text: `echo:${v}` }], details: { v } }));
const fail = tool("fail", async () => {
  throw new Error("it failed");
});
const shout = tool("shout", async (_id, { v }) => ({ content: [{ type: "text", text: v.toUpperCase() }], details: {} }));

function agent(initialState) {
  return new era.agent.Agent({ initialState: { model: faux.model, ...initialState }, streamFn: faux.stream, sessionId: "interop" });
}

if (mode === "write") {
  faux.registration.setResponses([
    fauxAssistantMessage(
      [fauxThinking("Two calls."), fauxText("Calling."), fauxToolCall("echo", { v: "ü" }, { id: "c1" }), fauxToolCall("fail", { v: "x" }, { id: "c2" })],
      { stopReason: "toolUse" },
    ),
    fauxAssistantMessage("Echoed; the other failed."),
    fauxAssistantMessage([fauxToolCall("shout", { v: "hey" }, { id: "c3" })], { stopReason: "toolUse" }),
    fauxAssistantMessage("HEY"),
  ]);
  const a = agent({ systemPrompt: "Be brief.", tools: [echo, fail], thinkingLevel: "low" });
  await a.prompt("Echo ü, then fail.");
  a.state.tools = [echo, shout]; // 1.6.0 declares the change in the transcript
  await a.prompt("Shout hey.");
  console.log(JSON.stringify(a.state.messages));
} else if (mode === "read") {
  const messages = JSON.parse(readFileSync(file, "utf8"));
  let seen;
  faux.registration.setResponses([
    (context) => {
      seen = { ...era.understood(context), roles: context.messages.map((m) => m.role) };
      return fauxAssistantMessage("read you");
    },
  ]);
  // 1.6.0 takes the prompt and tools from the transcript's system messages; 0.73.1 cannot.
  const a = agent({ messages, tools: [echo] });
  await a.prompt("And now?");
  console.log(JSON.stringify({ systemPrompt: a.state.systemPrompt, tools: a.state.tools.map((t) => t.name), seen, messages: a.state.messages }));
} else {
  console.error("mode must be write or read");
  process.exit(2);
}
