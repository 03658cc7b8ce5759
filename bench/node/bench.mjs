// The pi_core benchmark scenarios against the original pi-agent-core, one case per process,
// printing the same JSON line as bench/case.py:
//   node --expose-gc bench.mjs --pi 1.6.0 --scenario turns -n 2000 --rounds 5
// --pi picks the version: 1.6.0 (@earendil-works, the default) or 0.73.1 (@mariozechner).
// The scripts mirror bench/scenarios.py: pre-built replies pushed into pi-ai's own
// AssistantMessageEventStream at once (the streaming scenario pushes one delta per event-loop
// turn, via setImmediate), a no-op or 10 ms tool, an awaited counting emit.
import { readFileSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

const { values } = parseArgs({
	options: {
		pi: { type: "string", default: "1.6.0" },
		scenario: { type: "string" },
		n: { type: "string", short: "n" },
		rounds: { type: "string", default: "5" },
		"min-time": { type: "string", default: "0" },
	},
});
const SCOPES = { "1.6.0": "@earendil-works", "0.73.1": "@mariozechner" };
const scope = SCOPES[values.pi];
if (scope === undefined) {
	console.error(`--pi must be one of ${Object.keys(SCOPES).join(", ")}`);
	process.exit(2);
}
const { Agent, runAgentLoop } = await import(`${scope}/pi-agent-core`);
const { createAssistantMessageEventStream } = await import(`${scope}/pi-ai`);

const MODEL = {
	id: "bench",
	name: "bench",
	api: "bench",
	provider: "bench",
	baseUrl: "",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 0,
	maxTokens: 0,
};
const USAGE = {
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const TOOL_RESULT = { content: [{ type: "text", text: "ok" }], details: undefined };

// 1.6.0's transcript holds system messages (the prompt and the tool declarations) too.
const LLM_ROLES = new Set(["system", "user", "assistant", "toolResult"]);
const convertToLlm = (messages) => messages.filter((m) => LLM_ROLES.has(m.role));

const sleep10ms = () => new Promise((resolve) => setTimeout(resolve, 10));
const nextTurnOfEventLoop = () => new Promise((resolve) => setImmediate(resolve));

const tool = (name, execute) => ({
	name,
	label: name,
	description: name === "noop" ? "Does nothing." : "Sleeps 10 ms.",
	parameters: { type: "object", properties: {} }, // plain JSON Schema: both versions take it
	execute,
});
const NOOP_TOOL = tool("noop", async () => TOOL_RESULT);
const SLEEP_TOOL = tool("sleep", async () => {
	await sleep10ms();
	return TOOL_RESULT;
});

function assistant(content, stopReason) {
	return {
		role: "assistant",
		content,
		api: "bench",
		provider: "bench",
		model: "bench",
		usage: USAGE,
		stopReason,
		timestamp: Date.now(),
	};
}

function textEvents(partial) {
	const deltas = ["a", "b", "c"].map((delta) => ({ type: "text_delta", contentIndex: 0, delta, partial }));
	return [
		{ type: "start", partial },
		{ type: "text_start", contentIndex: 0, partial },
		...deltas,
		{ type: "text_end", contentIndex: 0, content: "abc", partial },
	];
}

function toolReply(toolName, calls) {
	const blocks = Array.from({ length: calls }, (_, i) => ({
		type: "toolCall",
		id: `call_${i}`,
		name: toolName,
		arguments: {},
	}));
	const message = assistant([{ type: "text", text: "abc" }, ...blocks], "toolUse");
	const events = textEvents(message);
	blocks.forEach((toolCall, i) => {
		const contentIndex = i + 1;
		events.push(
			{ type: "toolcall_start", contentIndex, partial: message },
			{ type: "toolcall_delta", contentIndex, delta: "{}", partial: message },
			{ type: "toolcall_end", contentIndex, toolCall, partial: message },
		);
	});
	events.push({ type: "done", reason: "toolUse", message });
	return events;
}

function textReply() {
	const message = assistant([{ type: "text", text: "abc" }], "stop");
	return [...textEvents(message), { type: "done", reason: "stop", message }];
}

// A stream function replaying one pre-built reply per call, instantly.
function scripted(replies) {
	let next = 0;
	return () => {
		const stream = createAssistantMessageEventStream();
		for (const event of replies[next++]) stream.push(event);
		return stream;
	};
}

// A stream function whose one reply is `deltas` text deltas, one per turn of the event loop.
function deltaStream(deltas) {
	return () => {
		const stream = createAssistantMessageEventStream();
		const message = assistant([{ type: "text", text: "" }], "stop");
		(async () => {
			stream.push({ type: "start", partial: message });
			stream.push({ type: "text_start", contentIndex: 0, partial: message });
			const delta = { type: "text_delta", contentIndex: 0, delta: "x", partial: message };
			for (let i = 0; i < deltas; i++) {
				await nextTurnOfEventLoop();
				stream.push(delta);
			}
			stream.push({ type: "text_end", contentIndex: 0, content: "x".repeat(deltas), partial: message });
			stream.push({ type: "done", reason: "stop", message });
		})();
		return stream;
	};
}

const user = () => ({ role: "user", content: "go", timestamp: Date.now() });

async function oneLoop(replies, agentTool, counter, extra = {}) {
	const context = { systemPrompt: "", messages: [], tools: [agentTool] };
	const config = { model: MODEL, convertToLlm, ...extra };
	await runAgentLoop([user()], context, config, counter.emit, undefined, scripted(replies));
}

function newCounter() {
	const counter = { events: 0 };
	counter.emit = async () => {
		counter.events++;
	};
	return counter;
}

function loopRun(replies, agentTool, extra) {
	return async () => {
		const counter = newCounter();
		await oneLoop(replies, agentTool, counter, extra);
		return counter.events;
	};
}

const threeTurns = (toolName) => {
	const call = toolReply(toolName, 1);
	return [call, call, textReply()];
};

// Each preparer does a round's setup and returns the async function to time.
const PREPARERS = {
	turns: (t) => loopRun([...Array(t - 1).fill(toolReply("noop", 1)), textReply()], NOOP_TOOL),
	fanout: (n) => loopRun([toolReply("sleep", n), textReply()], SLEEP_TOOL),
	sequential: (n) =>
		loopRun([toolReply("sleep", n), textReply()], SLEEP_TOOL, { toolExecution: "sequential" }),
	streaming: (d) => async () => {
		const counter = newCounter();
		const context = { systemPrompt: "", messages: [], tools: [] };
		await runAgentLoop([user()], context, { model: MODEL, convertToLlm }, counter.emit, undefined, deltaStream(d));
		return counter.events;
	},
	agents: (a) => {
		const replies = threeTurns("sleep");
		const counter = newCounter();
		const agents = Array.from({ length: a }, () => {
			const agent = new Agent({
				initialState: { model: MODEL, tools: [SLEEP_TOOL] },
				streamFn: scripted(replies),
				convertToLlm,
			});
			agent.subscribe(counter.emit);
			return agent;
		});
		return async () => {
			await Promise.all(agents.map((agent) => agent.prompt("go")));
			return counter.events;
		};
	},
	memory: (runs) => {
		const replies = threeTurns("noop");
		return async () => {
			const counter = newCounter();
			for (let i = 0; i < runs; i++) await oneLoop(replies, NOOP_TOOL, counter);
			return counter.events;
		};
	},
};
const ROUNDS = { memory: 1 };
const WARMUP_DIVISOR = { memory: 10 };
const MAX_ROUNDS = 200;

function rssKb(field) {
	const match = readFileSync("/proc/self/status", "utf8").match(new RegExp(`^${field}:\\s+(\\d+)`, "m"));
	return match ? Number(match[1]) : process.memoryUsage().rss / 1024;
}

function resetPeakRss() {
	try {
		writeFileSync("/proc/self/clear_refs", "5");
	} catch {
		// not Linux: the peak covers the whole process
	}
}

const collect = () => globalThis.gc?.();

// At least `rounds` rounds, and more (up to MAX_ROUNDS) until they add up to `minTime` seconds.
async function measure(scenario, n, rounds, minTime) {
	const prepare = PREPARERS[scenario];
	if (ROUNDS[scenario] !== undefined) {
		rounds = ROUNDS[scenario];
		minTime = 0;
	}
	const baseline = rssKb("VmRSS");
	resetPeakRss();
	await prepare(Math.max(1, Math.floor(n / (WARMUP_DIVISOR[scenario] ?? 1))))();
	const seconds = [];
	const growthKb = [];
	const events = new Set();
	const total = () => seconds.reduce((sum, s) => sum + s, 0);
	while (seconds.length < rounds || (total() < minTime && seconds.length < MAX_ROUNDS)) {
		const run = prepare(n);
		collect();
		const before = rssKb("VmRSS");
		const started = performance.now();
		events.add(await run());
		seconds.push((performance.now() - started) / 1000);
		collect();
		growthKb.push(rssKb("VmRSS") - before);
	}
	return {
		impl: "node",
		scenario,
		backend: values.pi,
		n,
		seconds,
		events: [...events].sort((a, b) => a - b),
		rss_mb: (rssKb("VmHWM") - baseline) / 1024,
		rss_growth_mb: Math.max(...growthKb) / 1024,
	};
}

if (!(values.scenario in PREPARERS) || !values.n) {
	console.error(`usage: node bench.mjs [--pi 1.6.0|0.73.1] --scenario {${Object.keys(PREPARERS).join(",")}} -n N [--rounds R] [--min-time S]`);
	process.exit(2);
}
const result = await measure(values.scenario, Number(values.n), Number(values.rounds), Number(values["min-time"]));
console.log(JSON.stringify(result));
