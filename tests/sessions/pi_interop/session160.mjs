// The TypeScript Pi coding agent 1.6.0's own session manager, driven by tests/sessions/test_session_interop.py.
// Only its session manager and message conversion are loaded (not the whole agent, which wants Node >= 22).
//   node session160.mjs read FILE      prints {messages, llm}: the messages the agent rebuilds from FILE
//                                      (buildSessionContext), and what it sends a model of them (convertToLlm)
//   node session160.mjs write FILE     appends the JSON messages read from stdin to a new session in FILE,
//                                      after a model change and a thinking level change
//   node session160.mjs compact FILE   writes a session with system messages, the agent's own kinds of entry
//                                      and message, a context edit, a compaction and a branch summary
import { readFileSync } from "node:fs";
import { dirname } from "node:path";

const dist = new URL("./node_modules/@earendil-works/pi-coding-agent/dist/core/", import.meta.url);
const { SessionManager } = await import(new URL("session-manager.js", dist));
const { convertToLlm } = await import(new URL("messages.js", dist));

const [mode, file] = process.argv.slice(2);
const session = () => SessionManager.open(file, dirname(file));
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
let clock = 1_700_000_000_000;
const tool = (name) => ({ name, description: `the ${name} tool`, parameters: { type: "object", properties: {} } });
const system = (content, more = {}) => ({ role: "system", content, timestamp: clock++, ...more });
const user = (text) => ({ role: "user", content: text, timestamp: clock++ });
const assistant = (text, more = {}) => ({ role: "assistant", content: [{ type: "text", text }], api: "faux",
    provider: "faux", model: "faux-1", usage, stopReason: "stop", timestamp: clock++, thinkingLevel: "off", ...more });
const shell = (command, output, exitCode, more = {}) => ({ role: "bashExecution", command, output,
    exitCode, cancelled: false, truncated: false, timestamp: clock++, ...more });

if (mode === "read") {
    const { messages } = session().buildSessionContext();
    process.stdout.write(JSON.stringify({ messages, llm: convertToLlm(messages) }));
} else if (mode === "write") {
    const messages = JSON.parse(readFileSync(0, "utf8"));
    const manager = session();
    manager.appendModelChange("faux", "faux-1");
    manager.appendThinkingLevelChange("off");
    for (const message of messages) manager.appendMessage(message);
    manager.appendSessionInfo("written by the TypeScript Pi 1.6.0");
} else if (mode === "compact") {
    const manager = session();
    manager.appendModelChange("faux", "faux-1");
    manager.appendMessage(system("You are a careful assistant.", { sections: { rules: "Be brief.", cwd: "/tmp" },
        toolsAdded: [tool("read"), tool("ls")] }));
    manager.appendMessage(user("Compacted away"));
    manager.appendMessage(assistant("Gone too"));
    const firstKept = manager.appendMessage(shell("ls", "a.txt\nb.txt", 0));
    manager.appendMessage(system("", { sections: { rules: "Be very brief." }, toolsRemoved: [{ name: "ls" }] }));
    manager.appendMessage(shell("cat secret", "hidden", 0, { excludeFromContext: true }));
    const edited = manager.appendMessage(user("Edited away"));
    const omitted = manager.appendMessage(assistant("Omitted reply"));
    manager.appendCustomMessageEntry("note", "A note from an extension", true);
    manager.appendMessage(user("Kept"));
    manager.appendMessage(assistant("Kept reply"));
    manager.appendUsage("cache_warming", "faux", "faux-1", usage, "warmed");
    manager.appendContextEdit(edited, { content: "Edited in" });
    manager.appendContextEdit(omitted, null);
    const compaction = manager.appendCompaction("We talked about files.", firstKept, 1234);
    manager.appendMessage(user("Abandoned branch"));
    manager.appendMessage(assistant("Abandoned reply"));
    manager.branchWithSummary(compaction, "Tried a different approach.");
    manager.appendMessage(system("", { toolsAdded: [tool("write")] }));
    manager.appendMessage(user("After the branch"));
    manager.appendMessage(assistant("Last reply"));
} else {
    console.error(`usage: node session160.mjs read|write|compact FILE (got ${mode})`);
    process.exit(2);
}
