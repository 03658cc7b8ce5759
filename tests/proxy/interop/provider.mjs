// Streams one reply with pi-ai's own OpenAI Responses or Gemini provider, of the given version,
// and prints the final message as one JSON line. The model (its baseUrl pointing at a test
// server) and the context come as JSON in a file, in the TypeScript Pi's own shapes.
//
//   node provider.mjs <0.73.1|1.6.0> <input.json>
import { readFileSync } from "node:fs";
import { pi } from "./pi.mjs";

const [version, input] = process.argv.slice(2);
const { ai, asSent } = await pi(version);
const { model, context } = JSON.parse(readFileSync(input, "utf8"));
const options = { apiKey: "interop-key", maxRetries: 0 };
const streamFn = model.api === "openai-responses" ? ai.streamOpenAIResponses : ai.streamGoogle;
const stream = streamFn(model, asSent(context), options);

let final;
for await (const event of stream) {
  if (event.type === "done") final = event.message;
  if (event.type === "error") final = event.error;
}
process.stdout.write(`${JSON.stringify(final)}\n`);
