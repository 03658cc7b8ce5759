// The reasoning settings pi-ai 1.6.0 puts in a request, case by case: for each case of the JSON
// file given (an api, the model's id, compat and thinkingLevelMap, a thinking level), the request
// body its streamSimple would send, caught by onPayload (the model's server is a closed port, so
// nothing is sent). Prints one JSON array of the bodies, in the order of the cases.
//
//   node reasoning.mjs <cases.json>
import { readFileSync } from "node:fs";
import { pi } from "./pi.mjs";

const PROVIDERS = {
  "openai-completions": "groq",
  "openai-responses": "openai",
  "anthropic-messages": "anthropic",
  "google-generative-ai": "google",
};
const { ai } = await pi("1.6.0");
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const bodies = [];
for (const { api, id = "m1", compat, thinkingLevelMap, level } of cases) {
  const model = {
    id, name: id, api, provider: PROVIDERS[api], baseUrl: "http://127.0.0.1:9/v1",
    reasoning: true, input: ["text"], contextWindow: 200000, maxTokens: 64000,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    ...(compat ? { compat } : {}), ...(thinkingLevelMap ? { thinkingLevelMap } : {}),
  };
  const context = { systemPrompt: "s", messages: [{ role: "user", content: "hi", timestamp: 1 }] };
  let body;
  // The Agent sends no level for "off": so does this.
  const reasoning = level === null || level === "off" ? {} : { reasoning: level };
  const options = { apiKey: "k", maxRetries: 0, onPayload: (payload) => { body = payload; }, ...reasoning };
  const reply = await ai.streamSimple(model, context, options).result();
  // A request pi-ai refuses to build (a map word Gemini does not take) is its error text.
  bodies.push(body ?? { error: reply.errorMessage });
}
console.log(JSON.stringify(bodies));
