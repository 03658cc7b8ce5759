// Streams one reply with pi-ai's own OpenAI Responses or Gemini provider and prints the final
// message as one JSON line. The model (its baseUrl pointing at a test server) and the context
// come as JSON in a file, in the TypeScript Pi's own shapes.
//
//   node provider.mjs <input.json>
import { readFileSync } from "node:fs";
import { streamGoogle } from "@mariozechner/pi-ai/google";
import { streamOpenAIResponses } from "@mariozechner/pi-ai/openai-responses";

const { model, context } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const options = { apiKey: "interop-key", maxRetries: 0 };
const stream =
  model.api === "openai-responses"
    ? streamOpenAIResponses(model, context, options)
    : streamGoogle(model, context, options);

let final;
for await (const event of stream) {
  if (event.type === "done") final = event.message;
  if (event.type === "error") final = event.error;
}
process.stdout.write(`${JSON.stringify(final)}\n`);
