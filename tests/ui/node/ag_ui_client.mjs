// The official AG-UI client against a pi_core.ui server. Prints one JSON object on stdout:
// the events it received (in order), the messages it rebuilt, the interrupts it was left with.
//   node ag_ui_client.mjs URL TOKEN SCENARIO PROMPT
// SCENARIO: "run" (one run), "twice" (a second prompt after the first run), "abort" (abort once a tool has started), "approve" (run, then
// approve every interrupt and run again), "deny" (the same, denying).
import { HttpAgent } from "@ag-ui/client";

const [url, token, scenario, prompt] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const agent = new HttpAgent({
  url,
  headers,
  threadId: "thread-1",
  initialMessages: [{ id: "user-1", role: "user", content: prompt }],
});
const runs = [];
let events = [];

const subscriber = {
  onEvent({ event }) {
    events.push(event);
    if (scenario === "abort" && event.type === "CUSTOM" && event.name === "pi_core.tool_start") {
      agent.abortRun();
    }
  },
};

async function run(parameters) {
  events = [];
  let error = null;
  try {
    await agent.runAgent(parameters, subscriber);
  } catch (exc) {
    error = String(exc && exc.message ? exc.message : exc);
  }
  runs.push({ events, error, interrupts: agent.pendingInterrupts ?? [] });
}

await run({ runId: "run-1" });
if (scenario === "twice") {
  agent.addMessage({ id: "user-2", role: "user", content: "and once more" });
  await run({ runId: "run-2" });
}
if (scenario === "approve" || scenario === "deny") {
  const resume = (agent.pendingInterrupts ?? []).map((interrupt) => ({
    interruptId: interrupt.id,
    status: "resolved",
    payload: scenario === "approve" ? { approved: true } : { approved: false, reason: "not now" },
  }));
  await run({ runId: "run-2", resume });
}
process.stdout.write(JSON.stringify({ runs, messages: agent.messages }) + "\n");
