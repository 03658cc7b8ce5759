"use strict";
// The run viewer: AG-UI events in, a chat and a timeline of each turn out. Plain JS, no build.

const $ = (id) => document.getElementById(id);
const TOKEN = sessionStorage.getItem("pi-core-token");
const MIN_SPAN_MS = 1000; // a turn's timeline shows at least one second

function jsonHeaders() {
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
  if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
  return headers;
}

// A server with a token: the page asks for it once, keeps it in this tab, and starts again.
function askForToken() {
  const form = $("sign-in");
  form.hidden = false;
  $("view").hidden = true;
  if (TOKEN) $("sign-in-error").textContent = "That token was refused.";
  form.onsubmit = (event) => {
    event.preventDefault();
    sessionStorage.setItem("pi-core-token", $("token").value.trim());
    location.reload();
  };
  document.body.dataset.ready = "sign-in";
  $("token").focus();
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function randomId(prefix) {
  return `${prefix}-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
}

// Server-Sent Events over fetch (EventSource cannot send a bearer token or a POST body).
async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
        else if (line.startsWith("id:")) id = line.slice(3).trim();
      }
      if (data.length) yield { id, event: JSON.parse(data.join("\n")) };
    }
  }
}

async function postJson(url, body) {
  const response = await fetch(url, { method: "POST", headers: jsonHeaders(), body: JSON.stringify(body ?? {}) });
  if (!response.ok) throw new Error(await errorText(response));
  return response.json();
}

async function errorText(response) {
  try {
    return (await response.json()).error || response.statusText;
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

function formatMs(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function formatUsage(usage) {
  return `${usage.input} in · ${usage.output} out · $${usage.cost.toFixed(4)}`;
}

// --- one conversation or durable run, drawn from its events ---------------------------------

class RunView {
  constructor(log, onPending) {
    this.log = log;
    this.onPending = onPending;
    this.texts = new Map();
    this.thoughts = new Map();
    this.calls = new Map();
    this.turn = null;
    this.turns = [];
    this.clockOffset = 0; // server time minus this browser's
    this.running = false;
    this.totals = { input: 0, output: 0, cost: 0, ms: 0 };
    this.runStart = null;
    this.ticking = false;
  }

  now() {
    return Date.now() + this.clockOffset;
  }

  handle(event) {
    const at = event.timestamp ?? this.now();
    if (event.subagentRunId) {
      this.subagent(event, at);
      return;
    }
    const handler = this[`on_${event.type}`];
    if (handler) handler.call(this, event, at);
    this.log.scrollTop = this.log.scrollHeight;
  }

  // A sub-agent's tool calls are drawn in its parent call's turn, under the parent's lane.
  subagent(event, at) {
    const parentId = event.subagentRunId.split("/")[0];
    const parent = this.calls.get(parentId);
    if (!parent) return;
    if (event.type === "SUBAGENT_STARTED") {
      parent.lane.classList.add("has-children");
    } else if (event.type === "CUSTOM" || event.type === "TOOL_CALL_RESULT") {
      const turn = this.turn;
      this.turn = parent.turn;
      const value = event.value || {};
      if (event.name === "pi_core.tool_start" && !this.calls.has(value.toolCallId)) {
        const call = this.call(value.toolCallId, value.toolName, at);
        call.lane.classList.add("child");
        call.label.textContent = call.name = `↳ ${value.toolName}`;
        const after = [...parent.turn.lanes.children].filter((lane) => lane.dataset.parent === parentId).pop() ?? parent.lane;
        call.lane.dataset.parent = parentId;
        after.after(call.lane);
      }
      if (event.type === "CUSTOM") this.on_CUSTOM(event, at);
      else this.on_TOOL_CALL_RESULT(event);
      this.turn = turn;
    }
  }

  note(text, className = "note") {
    this.log.append(el("div", `msg ${className}`, text));
  }

  on_RUN_STARTED(event, at) {
    this.clockOffset = at - Date.now();
    this.runStart = at;
    this.running = true;
    this.tick();
  }

  on_RUN_FINISHED(event, at) {
    this.finishRun(at);
    const interrupted = event.outcome && event.outcome.type === "interrupt";
    setStatus(interrupted ? "waiting for approval" : "idle", interrupted ? "running" : "");
  }

  on_RUN_ERROR(event, at) {
    this.finishRun(at);
    this.note(event.code === "aborted" ? `Aborted: ${event.message}` : `Error: ${event.message}`, "error");
    setStatus(event.code === "aborted" ? "aborted" : "error", "error");
  }

  finishRun(at) {
    this.running = false;
    if (this.runStart !== null) this.totals.ms += Math.max(0, at - this.runStart);
    this.runStart = null;
    for (const call of this.calls.values()) if (call.end === null && call.start !== null) call.end = at;
    this.layout();
    this.showTotals();
  }

  on_STEP_STARTED(event, at) {
    const turn = { start: at, end: null, element: el("div", "turn"), lanes: el("div", "timeline") };
    const head = el("div", "turn-head");
    head.append(el("span", "", event.stepName), (turn.stats = el("span", "stats", "")));
    turn.element.append(head, turn.lanes);
    turn.element.dataset.turn = String(this.turns.length + 1);
    this.turn = turn;
    this.turns.push(turn);
    this.log.append(turn.element);
  }

  on_STEP_FINISHED(event, at) {
    if (this.turn) this.turn.end = at;
    this.layout();
  }

  on_TEXT_MESSAGE_START(event) {
    const message = el("div", `msg ${event.role === "user" ? "user" : "assistant"}`, "");
    this.texts.set(event.messageId, message);
    this.placeBeforeTimeline(message);
  }

  on_TEXT_MESSAGE_CONTENT(event) {
    const message = this.texts.get(event.messageId);
    if (message) message.textContent += event.delta;
  }

  on_REASONING_MESSAGE_START(event) {
    const details = el("details", "thinking");
    details.open = true;
    const pre = el("pre", "", "");
    details.append(el("summary", "", "Thinking…"), pre);
    this.thoughts.set(event.messageId, { details, pre });
    this.placeBeforeTimeline(details);
  }

  on_REASONING_MESSAGE_CONTENT(event) {
    const thought = this.thoughts.get(event.messageId);
    if (thought) thought.pre.textContent += event.delta;
  }

  on_REASONING_MESSAGE_END(event) {
    const thought = this.thoughts.get(event.messageId);
    if (!thought) return;
    thought.details.open = false; // folded once complete
    thought.details.querySelector("summary").textContent = "Thinking";
  }

  // Text and thinking of a turn go above its timeline.
  placeBeforeTimeline(node) {
    if (this.turn && this.turn.element.isConnected) this.log.insertBefore(node, this.turn.element);
    else this.log.append(node);
  }

  on_TOOL_CALL_START(event) {
    this.call(event.toolCallId, event.toolCallName);
  }

  call(id, name, at) {
    let call = this.calls.get(id);
    if (call) return call;
    // A run followed from an offset may begin inside a turn.
    if (!this.turn) this.on_STEP_STARTED({ stepName: "turn" }, at ?? this.now());
    const lane = el("div", "lane");
    const label = el("div", "lane-label", name);
    const track = el("div", "track");
    const bar = el("div", "bar", "");
    bar.dataset.toolCallId = id;
    bar.hidden = true;
    track.append(bar);
    lane.append(label, track);
    lane.hidden = true;
    call = { id, name, lane, label, bar, start: null, end: null, turn: this.turn };
    if (this.turn) this.turn.lanes.append(lane);
    this.calls.set(id, call);
    return call;
  }

  on_CUSTOM(event, at) {
    const value = event.value || {};
    if (event.name === "pi_core.tool_start") {
      const call = this.call(value.toolCallId, value.toolName, at);
      call.start = at;
      call.bar.hidden = call.lane.hidden = false;
      call.bar.classList.remove("pending");
      call.bar.title = `${value.toolName}(${JSON.stringify(value.args)})`;
      this.layout();
    } else if (event.name === "pi_core.tool_progress") {
      const call = this.calls.get(value.toolCallId);
      if (call && value.text) {
        call.bar.textContent = value.text;
        call.label.textContent = `${call.name}: ${value.text}`;
      }
    } else if (event.name === "pi_core.tool_end") {
      const call = this.calls.get(value.toolCallId);
      if (!call) return;
      call.end = at;
      call.bar.classList.add(value.isError ? "error" : "done");
      call.bar.dataset.durationMs = String(value.durationMs);
      this.layout();
    } else if (event.name === "pi_core.usage") {
      // A sub-agent's turn counts in the totals; the line under the turn is the parent's own.
      const turn = event.subagentRunId ? null : this.turn;
      if (turn) turn.stats.textContent = `${formatUsage(value.usage)} · ${formatMs(at - turn.start)}`;
      this.totals.input += value.usage.input;
      this.totals.output += value.usage.output;
      this.totals.cost += value.usage.cost;
      this.showTotals();
    } else if (event.name === "pi_core.pending_approval") {
      const call = this.call(value.toolCallId, value.toolName);
      call.start = call.start ?? at;
      call.bar.hidden = call.lane.hidden = false;
      call.bar.classList.add("pending");
      call.label.textContent = `${value.toolName}: waits for approval`;
      this.layout();
      this.onPending(value);
    } else if (event.name === "pi_core.limit") {
      this.note(`Stopped by a limit: ${value.kind} ${value.value} of ${value.limit}`);
    }
  }

  on_TOOL_CALL_RESULT(event) {
    const call = this.calls.get(event.toolCallId);
    if (!call) return;
    const text = typeof event.content === "string" ? event.content : JSON.stringify(event.content);
    call.label.textContent = `${call.name} → ${text.split("\n")[0]}`;
    call.bar.textContent = "";
    call.lane.title = `${call.bar.title}\n${text}`;
  }

  // Each bar spans its call's time on its turn's axis: parallel calls overlap as they ran.
  layout() {
    const now = this.now();
    for (const turn of this.turns) {
      const calls = [...this.calls.values()].filter((c) => c.turn === turn && c.start !== null);
      if (!calls.length) continue;
      const origin = Math.min(...calls.map((c) => c.start));
      const last = Math.max(...calls.map((c) => c.end ?? now));
      const span = Math.max(last - origin, MIN_SPAN_MS);
      for (const call of calls) {
        const end = call.end ?? now;
        call.bar.style.left = `${((call.start - origin) / span) * 100}%`;
        call.bar.style.width = `${(Math.max(end - call.start, 0) / span) * 100}%`;
      }
    }
  }

  tick() {
    if (this.ticking) return;
    this.ticking = true;
    const step = () => {
      this.layout();
      if (this.running) requestAnimationFrame(step);
      else this.ticking = false;
    };
    requestAnimationFrame(step);
  }

  showTotals() {
    const t = this.totals;
    $("totals").textContent = `${t.input} in · ${t.output} out · $${t.cost.toFixed(4)} · ${formatMs(t.ms)}`;
  }
}

// --- the page -------------------------------------------------------------------------------

const page = {
  threadId: randomId("thread"),
  view: null,
  mode: "chat", // or "run": following a durable run
  runId: null,
  lastOffset: -1,
  follow: null, // the AbortController of the durable run being followed
  pending: new Map(),
  decisions: new Map(),
  running: false,
  hasChat: true,
};

function setStatus(text, className = "") {
  const status = $("status");
  status.textContent = text;
  status.className = `status ${className}`;
}

function setRunning(running) {
  page.running = running;
  $("send").disabled = running || page.mode !== "chat" || !page.hasChat;
  for (const id of ["steer", "follow-up", "stop", "abort"]) $(id).disabled = !running;
}

function newView(title) {
  $("log").replaceChildren();
  $("approvals").replaceChildren();
  page.pending.clear();
  page.decisions.clear();
  $("view-title").textContent = title;
  page.view = new RunView($("log"), showApproval);
  page.view.showTotals();
}

async function streamInto(response) {
  const view = page.view; // a stream replaced by another never draws into the new view
  if (!response.ok) {
    view.note(`Error: ${await errorText(response)}`, "error");
    setStatus("error", "error");
    return;
  }
  for await (const { id, event } of readEvents(response)) {
    if (view !== page.view) return;
    if (id !== null) page.lastOffset = Number(id);
    view.handle(event);
  }
}

async function chatRun(body) {
  setRunning(true);
  setStatus("running", "running");
  try {
    const response = await fetch("api/agui", { method: "POST", headers: jsonHeaders(), body: JSON.stringify(body) });
    await streamInto(response);
  } catch (error) {
    page.view.note(`Error: ${error.message}`, "error");
  } finally {
    setRunning(false);
  }
}

function runInput(extra) {
  return { threadId: page.threadId, runId: randomId("run"), state: {}, tools: [], context: [], forwardedProps: {}, ...extra };
}

function send(text) {
  page.view.log.append(el("div", "msg user", text));
  return chatRun(runInput({ messages: [{ id: randomId("user"), role: "user", content: text }] }));
}

function showApproval(call) {
  page.pending.set(call.toolCallId, call);
  const card = el("div", "approval");
  card.dataset.toolCallId = call.toolCallId;
  const what = el("code", "", `${call.toolName}(${JSON.stringify(call.args)})${call.reason ? ` — ${call.reason}` : ""}`);
  const approve = el("button", "", "Approve");
  approve.dataset.approve = call.toolCallId;
  const deny = el("button", "danger", "Deny");
  deny.dataset.deny = call.toolCallId;
  approve.onclick = () => decide(call.toolCallId, true, card);
  deny.onclick = () => decide(call.toolCallId, false, card);
  card.append(el("span", "", "Approve?"), what, approve, deny);
  $("approvals").append(card);
}

async function decide(toolCallId, approved, card) {
  card.remove();
  if (page.mode === "run") {
    const action = approved ? "approve" : "deny";
    await postJson(`api/runs/${encodeURIComponent(page.runId)}/${action}`, { toolCallId, reason: approved ? undefined : "denied on the page" });
    page.pending.delete(toolCallId);
    followRun(page.runId, page.lastOffset, false);
    return;
  }
  page.decisions.set(toolCallId, approved);
  if (page.decisions.size < page.pending.size) return; // the run resumes once all are decided
  const resume = [...page.decisions].map(([interruptId, ok]) => ({
    interruptId,
    status: "resolved",
    payload: ok ? { approved: true } : { approved: false, reason: "denied on the page" },
  }));
  page.pending.clear();
  page.decisions.clear();
  await chatRun(runInput({ messages: [], resume }));
}

async function control(action, body) {
  const base = page.mode === "chat" ? `api/threads/${encodeURIComponent(page.threadId)}` : `api/runs/${encodeURIComponent(page.runId)}`;
  try {
    await postJson(`${base}/${action}`, body);
    if (body && body.text) page.view.note(`${action === "steer" ? "Steering" : "Follow-up"} queued: ${body.text}`);
  } catch (error) {
    page.view.note(`${action}: ${error.message}`, "error");
  }
}

function queued(action) {
  const text = $("input").value.trim();
  if (!text) return;
  $("input").value = "";
  control(action, { text });
}

// --- durable runs ----------------------------------------------------------------------------

async function refreshRuns() {
  let response;
  try {
    response = await fetch("api/runs", { headers: jsonHeaders() });
  } catch {
    return; // the server is away: the next refresh tries again
  }
  if (!response.ok) return;
  const runs = await response.json();
  const list = $("runs");
  list.replaceChildren(
    ...runs.map((run) => {
      const item = el("li", run.runId === page.runId ? "selected" : "");
      item.dataset.runId = run.runId;
      item.append(el("span", "", `${run.agent} · ${run.runId.slice(0, 10)}`), el("span", `state ${run.state}`, run.state));
      item.onclick = () => followRun(run.runId, Number($("offset").value || -1), true);
      return item;
    }),
  );
}

async function followRun(runId, after, fresh) {
  if (page.follow) page.follow.abort();
  const follow = (page.follow = new AbortController());
  page.mode = "run";
  page.runId = runId;
  page.lastOffset = after;
  if (fresh) newView(`Durable run ${runId}`);
  setRunning(true);
  setStatus("following", "running");
  for (const item of $("runs").children) item.classList.toggle("selected", item.dataset.runId === runId);
  try {
    const url = `api/runs/${encodeURIComponent(runId)}/events?after=${after}`;
    await streamInto(await fetch(url, { headers: jsonHeaders(), signal: follow.signal }));
  } catch (error) {
    if (error.name !== "AbortError") page.view.note(`Error: ${error.message}`, "error");
  } finally {
    if (page.follow === follow) setRunning(false); // not when another follow replaced this one
  }
}

function backToChat() {
  if (page.follow) page.follow.abort();
  page.mode = "chat";
  page.runId = null;
  newView("Chat");
  setRunning(false);
  setStatus("idle");
}

async function start() {
  newView("Chat");
  $("composer").onsubmit = (event) => {
    event.preventDefault();
    const text = $("input").value.trim();
    if (!text || page.running || page.mode !== "chat") return;
    $("input").value = "";
    send(text);
  };
  $("input").onkeydown = (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      if (page.running) queued("steer");
      else $("composer").requestSubmit();
    }
  };
  $("steer").onclick = () => queued("steer");
  $("follow-up").onclick = () => queued("follow_up");
  $("stop").onclick = () => control("stop", {});
  $("abort").onclick = () => control("abort", {});
  $("to-chat").onclick = backToChat;
  const response = await fetch("api/info", { headers: jsonHeaders() });
  if (response.status === 401) {
    askForToken();
    return;
  }
  const info = response.ok ? await response.json() : { chat: true, runs: false };
  page.hasChat = info.chat;
  if (!info.chat) {
    $("view-title").textContent = "Pick a durable run";
    $("to-chat").hidden = true;
  }
  if (info.runs) {
    $("runs-panel").hidden = false;
    $("runs-refresh").onclick = refreshRuns;
    refreshRuns();
    setInterval(refreshRuns, 2000);
  }
  setRunning(false);
  document.body.dataset.ready = "true";
}

start();
