// The TypeScript Pi coding agent's own session manager, driven by tests/cli/test_session_interop.py.
//   node session.mjs read FILE   prints the messages the agent rebuilds from FILE, as JSON
//   node session.mjs write FILE  appends the JSON messages read from stdin to a new session in
//                                FILE, with a model change and a thinking level change among them
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const [mode, file] = process.argv.slice(2);
if (mode === "read") {
    const session = SessionManager.open(file, dirname(file));
    process.stdout.write(JSON.stringify(session.buildSessionContext().messages));
} else if (mode === "write") {
    const messages = JSON.parse(readFileSync(0, "utf8"));
    const session = SessionManager.open(file, dirname(file));
    session.appendModelChange("faux", "faux-1");
    session.appendThinkingLevelChange("high");
    for (const message of messages) session.appendMessage(message);
    session.appendSessionInfo("written by the TypeScript Pi");
} else {
    console.error(`usage: node session.mjs read|write FILE (got ${mode})`);
    process.exit(2);
}
