// The AI SDK's own reader of the UI message stream, against a pi_core.ui endpoint. Prints the
// header, every chunk as parsed by the SDK's schema, and the UI message the SDK's reader built.
//   node ui_message_stream.mjs URL PROMPT
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const [url, prompt] = process.argv.slice(2);
const response = await fetch(url, {
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ prompt }),
});
const chunks = [];
const errors = [];
const parsed = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema });
const stream = parsed.pipeThrough(
  new TransformStream({
    transform(result, controller) {
      if (!result.success) {
        errors.push(String(result.error));
        return;
      }
      chunks.push(result.value);
      controller.enqueue(result.value);
    },
  }),
);
let message = null;
for await (const snapshot of readUIMessageStream({ stream, onError: (e) => errors.push(String(e)) })) {
  message = snapshot;
}
process.stdout.write(
  JSON.stringify({ header: response.headers.get("x-vercel-ai-ui-message-stream"), chunks, errors, message }) + "\n",
);
