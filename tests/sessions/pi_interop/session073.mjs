// The TypeScript Pi coding agent's own session manager, driven by tests/cli/test_session_interop.py.
//   node session.mjs read FILE      prints {messages, llm}: the messages the agent rebuilds from
//                                   FILE, and what it sends a model of them (convertToLlm)
//   node session.mjs write FILE     appends the JSON messages read from stdin to a new session in
//                                   FILE, with a model change and a thinking level change among them
//   node session.mjs compact FILE   writes a session with the agent's own kinds of entry and message:
//                                   shell commands, a custom message, a compaction and a branch summary
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { convertToLlm, SessionManager } from "@mariozechner/pi-coding-agent";

const [mode, file] = process.argv.slice(2);
const session = () => SessionManager.open(file, dirname(file));
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
let clock = 1_700_000_000_000;
const user = (text) => ({ role: "user", content: text, timestamp: clock++ });
const assistant = (text) => ({ role: "assistant", content: [{ type: "text", text }], api: "faux",
    provider: "faux", model: "faux-1", usage, stopReason: "stop", timestamp: clock++ });
const shell = (command, output, exitCode, more = {}) => ({ role: "bashExecution", command, output,
    exitCode, cancelled: false, truncated: false, timestamp: clock++, ...more });

if (mode === "read") {
    const { messages } = session().buildSessionContext();
    process.stdout.write(JSON.stringify({ messages, llm: convertToLlm(messages) }));
} else if (mode === "write") {
    const messages = JSON.parse(readFileSync(0, "utf8"));
    const manager = session();
    manager.appendModelChange("faux", "faux-1");
    manager.appendThinkingLevelChange("high");
    for (const message of messages) manager.appendMessage(message);
    manager.appendSessionInfo("written by the TypeScript Pi");
} else if (mode === "compact") {
    const manager = session();
    manager.appendMessage(user("Compacted away"));
    manager.appendMessage(assistant("Gone too"));
    const firstKept = manager.appendMessage(shell("ls", "a.txt\nb.txt", 0));
    manager.appendMessage(shell("false", "", 1));
    manager.appendMessage(shell("cat secret", "hidden", 0, { excludeFromContext: true }));
    manager.appendMessage(shell("make", "partial", null, { truncated: true, fullOutputPath: "/tmp/out.log" }));
    manager.appendCustomMessageEntry("note", "A note from an extension", true);
    manager.appendCustomMessageEntry("pic", [{ type: "text", text: "see" }, { type: "image", data: "AAAA", mimeType: "image/png" }], false);
    manager.appendMessage(user("Kept"));
    manager.appendMessage(assistant("Kept reply"));
    const compaction = manager.appendCompaction("We talked about files.", firstKept, 1234);
    manager.appendMessage(user("Abandoned branch"));
    manager.appendMessage(assistant("Abandoned reply"));
    manager.branchWithSummary(compaction, "Tried a different approach.");
    manager.appendMessage(user("After the branch"));
    manager.appendMessage(assistant("Last reply"));
} else {
    console.error(`usage: node session.mjs read|write|compact FILE (got ${mode})`);
    process.exit(2);
}
