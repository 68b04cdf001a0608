// agentloop's web UI: the session list, one session live (progress, its
// iterations and events, steering), the new-session form built from each
// agent's input schema, approvals and toasts. Plain DOM, no build step: the
// server embeds this file. Everything shown comes from the server, so a
// reload restores the view.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);

/** An element with attributes and children; text is always text, never HTML. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(path, options = {}) {
  const init = { method: options.method || "GET", headers: {} };
  if (options.body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error((data && data.error) || `${r.status} ${r.statusText}`);
  return data;
}

// ---------- toasts

function toast(text, actions = [], ms = 6000) {
  const el = h("div", { class: "toast", role: "status" }, h("div", {}, text));
  if (actions.length) {
    el.append(h("div", { class: "actions" }, actions.map(([label, run]) => h("button", { type: "button", onclick: () => { el.remove(); run(); } }, label))));
  } else {
    setTimeout(() => el.remove(), ms);
  }
  $("#toasts").append(el);
  return el;
}

const fail = (e) => toast(e.message || String(e));

// ---------- formatting

const STATUS_ICON = { running: "spinner", idle: "spinner", paused: "‖", interrupted: "↯", completed: "✓", error: "✗", terminated: "▲" };

function statusBadge(status) {
  const icon = STATUS_ICON[status] || "•";
  const mark = icon === "spinner" ? h("span", { class: "icon spinner", "aria-hidden": "true" }) : h("span", { "aria-hidden": "true", class: status === "completed" ? "ok" : status === "paused" ? "" : "bad" }, icon);
  return h("span", { class: "status", "data-status": status }, mark, status);
}

function duration(ms) {
  if (ms === null || ms === undefined) return "";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${s % 60}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");

function shorten(text, n) {
  return text.length > n ? text.slice(0, n) + "…" : text;
}

/** A long text cut to `n` characters with a "show all" button. */
function truncated(text, n = 400) {
  const pre = h("pre", {}, shorten(text, n));
  if (text.length <= n) return pre;
  const more = h("button", { type: "button", class: "show-all", onclick: () => { pre.textContent = text; more.remove(); } }, `show all (${text.length} characters)`);
  return h("div", {}, pre, more);
}

const asText = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));

// ---------- routing

let leave = () => {};

function route() {
  leave();
  leave = () => {};
  // Toasts belong to the page that raised them.
  $("#toasts").replaceChildren();
  const m = location.hash.match(/^#\/s\/(.+)$/);
  if (m) showSession(decodeURIComponent(m[1]));
  else showList();
}

window.addEventListener("hashchange", route);

// ---------- the session list

function showList() {
  const view = $("#view");
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const agentFilter = h("select", { id: "filter-agent", "aria-label": "Agent" }, h("option", { value: "" }, "all agents"));
  const statusFilter = h("select", { id: "filter-status", "aria-label": "Status" }, h("option", { value: "" }, "any status"),
    ["running", "paused", "completed", "error", "terminated", "idle"].map((s) => h("option", { value: s }, s)));
  const body = h("tbody", { id: "sessions" });
  view.replaceChildren(
    h("h1", {}, "Sessions"),
    h("div", { class: "filters" }, h("label", {}, "Agent", agentFilter), h("label", {}, "Status", statusFilter)),
    h("table", {}, h("thead", {}, h("tr", {}, ["Status", "Agent", "Task", "Started", "Duration", "Iterations"].map((t) => h("th", {}, t)))), body),
    h("p", { id: "sessions-empty", class: "muted", hidden: true }, "No sessions yet: start one with New session."),
  );
  const rows = new Map();
  const render = () => {
    const list = [...rows.values()]
      .filter((r) => !agentFilter.value || r.agent === agentFilter.value)
      .filter((r) => !statusFilter.value || r.status === statusFilter.value)
      .sort((a, b) => (a.startedAt < b.startedAt ? 1 : -1));
    body.replaceChildren(...list.map(sessionRow));
    $("#sessions-empty").hidden = list.length > 0;
  };
  agentFilter.value = params.get("agent") || "";
  statusFilter.value = params.get("status") || "";
  agentFilter.onchange = statusFilter.onchange = render;
  agents().then((list) => {
    for (const a of list) agentFilter.append(h("option", { value: a.name }, a.name));
    agentFilter.value = params.get("agent") || "";
  }).catch(fail);
  const stream = new EventSource("/api/events");
  stream.addEventListener("session", (e) => { const r = JSON.parse(e.data); rows.set(r.sessionId, r); render(); });
  stream.addEventListener("removed", (e) => { rows.delete(JSON.parse(e.data).sessionId); render(); });
  leave = () => stream.close();
  render();
}

function sessionRow(r) {
  const open = () => { location.hash = `#/s/${encodeURIComponent(r.sessionId)}`; };
  const iterations = r.maxIterations ? `${r.currentIteration}/${r.maxIterations}` : `${r.currentIteration}`;
  return h("tr", { class: "row", tabindex: "0", "data-id": r.sessionId, onclick: open, onkeydown: (e) => { if (e.key === "Enter") open(); } },
    h("td", { title: r.interrupted ? "its process ended mid-run: open it and resume" : "" }, statusBadge(r.interrupted ? "interrupted" : r.status)), h("td", {}, r.agent), h("td", {}, shorten(r.task || "", 120)),
    h("td", {}, when(r.startedAt)), h("td", {}, duration(r.durationMs)), h("td", { class: "iterations" }, iterations));
}

// ---------- agents and the new-session form

let agentList = null;
async function agents() {
  if (!agentList) agentList = (await api("/api/agents")).agents.filter((a) => a.name !== "bench-engine");
  return agentList;
}

/** Resolves `$ref` against the schema's `$defs`. */
function resolve(schema, root) {
  let s = schema || {};
  for (let i = 0; s.$ref && i < 8; i++) s = (root.$defs || root.definitions || {})[s.$ref.split("/").pop()] || {};
  if (s.allOf && s.allOf.length === 1) return resolve(s.allOf[0], root);
  return s;
}

/** The choices of an enum, written as `enum` or as `oneOf` constants. */
function choices(s) {
  if (Array.isArray(s.enum)) return s.enum;
  const alts = s.oneOf || s.anyOf;
  if (Array.isArray(alts) && alts.every((a) => a.const !== undefined || (a.enum && a.enum.length === 1))) return alts.map((a) => (a.const !== undefined ? a.const : a.enum[0]));
  return null;
}

function typeOf(s) {
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (t) return t;
  if (s.anyOf) { const inner = s.anyOf.find((a) => a.type !== "null"); return inner ? typeOf(inner) : "string"; }
  return "string";
}

/** "commandTimeoutSecs" as "Command timeout secs". */
function humanize(name) {
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_-]+/g, " ").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Form fields for an object schema; each reads back its value. */
function fieldsFor(schema, root, prefix = "") {
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const readers = [];
  const nodes = [];
  for (const [name, raw] of Object.entries(props)) {
    const s = resolve(raw, root);
    const id = `f-${prefix}${name}`;
    const label = (raw.title || humanize(name)) + (required.has(name) ? " *" : "");
    const help = raw.description || s.description;
    const def = raw.default !== undefined ? raw.default : s.default;
    const options = choices(s);
    const type = typeOf(s);
    let input;
    let read;
    if (options) {
      input = h("select", { id, name }, options.map((o) => h("option", { value: o }, o)));
      if (def !== undefined) input.value = def;
      read = () => input.value;
    } else if (type === "boolean") {
      input = h("input", { id, name, type: "checkbox" });
      input.checked = def === true;
      read = () => input.checked;
    } else if (type === "integer" || type === "number") {
      input = h("input", { id, name, type: "number", step: type === "integer" ? "1" : "any" });
      if (def !== undefined && def !== null) input.value = def;
      read = () => (input.value === "" ? undefined : Number(input.value));
    } else if (type === "object" && s.properties) {
      const inner = fieldsFor(s, root, `${prefix}${name}-`);
      nodes.push(h("details", { class: "nested" }, h("summary", {}, label), inner.nodes));
      readers.push([name, inner.read]);
      continue;
    } else if (type === "array") {
      input = h("textarea", { id, name, rows: 2, placeholder: "one per line" });
      if (Array.isArray(def)) input.value = def.join("\n");
      read = () => (input.value.trim() ? input.value.split("\n").map((l) => l.trim()).filter(Boolean) : undefined);
    } else {
      const long = /goal|task|question|prompt/i.test(name);
      input = long ? h("textarea", { id, name, rows: 3 }) : h("input", { id, name });
      if (typeof def === "string") input.value = def;
      read = () => (input.value === "" ? undefined : input.value);
    }
    if (required.has(name)) input.setAttribute("required", "");
    nodes.push(h("label", { for: id }, label, input, help ? h("small", { class: "muted" }, help) : null));
    readers.push([name, read]);
  }
  const read = () => {
    const out = {};
    for (const [name, r] of readers) { const v = r(); if (v !== undefined) out[name] = v; }
    return out;
  };
  return { nodes, read };
}

async function openNewSession() {
  const dialog = $("#new-dialog");
  const select = $("#new-agent");
  let form = null;
  const list = await agents().catch((e) => { fail(e); return []; });
  select.replaceChildren(...list.map((a) => h("option", { value: a.name }, a.name)));
  const build = () => {
    const agent = list.find((a) => a.name === select.value);
    if (!agent) return;
    $("#new-about").textContent = agent.about;
    form = fieldsFor(agent.inputSchema, agent.inputSchema);
    $("#new-fields").replaceChildren(...form.nodes);
    $("#new-error").textContent = "";
  };
  select.onchange = build;
  build();
  $("#new-form").onsubmit = async (e) => {
    e.preventDefault();
    try {
      const { sessionId } = await api("/api/sessions", { method: "POST", body: { agent: select.value, input: form.read() } });
      dialog.close();
      location.hash = `#/s/${encodeURIComponent(sessionId)}`;
    } catch (err) {
      $("#new-error").textContent = err.message;
    }
  };
  dialog.showModal();
}

$("#new-session").addEventListener("click", openNewSession);
for (const b of document.querySelectorAll("[data-close]")) b.addEventListener("click", () => b.closest("dialog").close());

// ---------- one session

const ROW = 24;

function showSession(id) {
  const view = $("#view");
  let session = null;
  let detailsOpen = localStorage.getItem("details") !== "closed";
  const events = [];
  const open = new Set();
  let refetchTimer = null;
  let lastPending = null;
  let declineReason = null;

  const progress = h("section", { class: "progress", "aria-label": "Progress" });
  const task = h("div", { class: "task" });
  const iterationsBox = h("div", { id: "iterations" });
  const eventsBox = h("div", { class: "events", id: "events", tabindex: "0", "aria-label": "Events" });
  const spacer = h("div", { class: "spacer" });
  eventsBox.append(spacer);
  const summaryBox = h("div", { id: "summary" });
  const panel = h("section", { class: "panel", id: "details" },
    h("div", {}, h("h3", {}, "Iterations"), iterationsBox, summaryBox),
    h("div", {}, h("h3", {}, "Events"), eventsBox));
  view.replaceChildren(h("p", {}, h("a", { href: "#/" }, "← Sessions")), task, progress, panel);

  const act = (path, body) => api(`/api/sessions/${encodeURIComponent(id)}/${path}`, { method: "POST", body: body || {} }).then(refetch).catch(fail);

  // Built once and updated in place, so a button is never swapped out from
  // under a click.
  const stepEl = h("span", { class: "step", id: "step" });
  const statusEl = h("span");
  const metaEl = h("span", { class: "muted" });
  const reasonEl = h("span", { class: "muted", id: "finish-reason" });
  const buttonsEl = h("div", { class: "buttons" });
  const fill = h("div");
  const bar = h("div", { class: "bar", role: "progressbar", "aria-valuemin": "0" }, fill);
  progress.append(h("div", { class: "line" }, stepEl, statusEl, metaEl, reasonEl, buttonsEl), bar);
  let buttonsFor = "";

  function renderProgress() {
    const s = session;
    const max = s.maxIterations;
    stepEl.textContent = max ? `Step ${s.currentIteration}/${max}` : `Step ${s.currentIteration}`;
    const pct = s.status === "completed" ? 100 : max ? Math.min(100, (100 * s.currentIteration) / max) : 0;
    // Stored as running, but its process died mid-run: it waits to be resumed.
    const shown = s.interrupted ? "interrupted" : s.status;
    statusEl.replaceChildren(statusBadge(shown));
    metaEl.textContent = `${s.agent} · ${duration(s.duration)}`;
    reasonEl.textContent = s.finishReason || "";
    bar.className = `bar ${shown}`;
    bar.setAttribute("aria-valuemax", String(max || 0));
    bar.setAttribute("aria-valuenow", String(s.currentIteration));
    fill.style.width = `${pct}%`;
    panel.hidden = !detailsOpen;
    const key = `${shown}|${detailsOpen}`;
    if (key === buttonsFor) return;
    buttonsFor = key;
    const buttons = [];
    if (shown === "running" || shown === "idle") buttons.push(h("button", { type: "button", id: "pause", onclick: () => act("pause") }, "Pause"));
    if (shown === "paused" || shown === "interrupted") buttons.push(h("button", { type: "button", id: "resume", onclick: () => act("resume") }, "Resume"));
    if (!["completed", "error", "terminated"].includes(s.status)) buttons.push(h("button", { type: "button", id: "terminate", class: "danger", onclick: openTerminate }, "Terminate"));
    buttons.push(h("button", { type: "button", id: "toggle-details", "aria-expanded": String(detailsOpen), "aria-controls": "details", onclick: () => { detailsOpen = !detailsOpen; localStorage.setItem("details", detailsOpen ? "open" : "closed"); renderProgress(); } }, detailsOpen ? "Hide details" : "Show details"));
    buttonsEl.replaceChildren(...buttons);
  }

  // "Fork from here": a new session from the last checkpoint of an
  // iteration, with the user's words for what to do differently. The
  // session's own folder is changed only after the user saw what changes.
  function forkHere(iteration) {
    const at = (session.checkpoints || []).filter((c) => c.iteration === iteration).pop();
    if (!at) return null;
    const hint = h("input", { type: "text", class: "fork-hint", placeholder: "What to do differently (optional)", "aria-label": `Hint for a fork from iteration ${iteration}` });
    const go = async () => {
      const path = `/api/sessions/${encodeURIComponent(id)}/fork`;
      const body = { step: at.step, hint: hint.value.trim() || null };
      let r = await api(path, { method: "POST", body });
      if (r.forked === false) {
        const lines = (r.changes || []).map((c) => `${c.kind.startsWith("folder") ? "folder " : ""}${c.path} (${c.kind.replace("folder", "").toLowerCase() || "changed"})`);
        if (!confirm(`Forking from step ${at.step} puts ${r.workspace} back as it was then:\n${lines.join("\n")}\n\nChange these files?`)) return;
        r = await api(path, { method: "POST", body: { ...body, confirm: true } });
      }
      location.hash = `#/s/${encodeURIComponent(r.sessionId)}`;
    };
    return h("div", { class: "fork" }, hint, h("button", { type: "button", class: "fork-here", "data-step": at.step, onclick: () => go().catch(fail) }, "Fork from here"));
  }

  let iterationsShown = "";
  function renderIterations() {
    // Redrawn only when something changed, so an open detail is not swapped out under a click.
    const shown = JSON.stringify([session.iterations, session.summary, session.checkpoints]);
    if (shown === iterationsShown) return;
    iterationsShown = shown;
    const items = (session.iterations || []).map((it) => {
      const mark = it.status === "completed" ? h("span", { class: "ok" }, "✓") : it.status === "failed" ? h("span", { class: "bad" }, "✗") : h("span", { class: "icon spinner", "aria-label": "running" });
      const d = h("details", { class: "iteration", "data-iteration": it.iterationNumber },
        h("summary", {}, mark, `Iteration ${it.iterationNumber}`, h("span", { class: "muted" }, `${it.toolCalls.length} tool call(s) · ${duration(it.duration)}`)),
        h("div", { class: "body" },
          it.error ? h("p", { class: "bad" }, it.error) : null,
          it.toolCalls.map((c) => h("div", { class: "call" },
            h("div", { class: "head" }, h("strong", {}, c.toolName), h("span", { class: c.status === "success" ? "ok" : c.status === "error" ? "bad" : "warn" }, c.status), h("span", { class: "muted" }, c.duration !== null && c.duration !== undefined ? `${c.duration} ms` : "")),
            h("div", { class: "muted" }, "input"), truncated(asText(c.input), 300),
            c.output !== null && c.output !== undefined ? [h("div", { class: "muted" }, "output"), truncated(asText(c.output), 400)] : null,
            c.error ? h("p", { class: "bad" }, c.error) : null)),
          it.messages.map((m) => h("div", { class: "msg" }, h("div", { class: "head" }, h("strong", {}, m.role), m.model ? h("span", { class: "muted" }, m.model) : null), truncated(m.content, 400))),
          forkHere(it.iterationNumber)));
      d.open = open.has(it.iterationNumber);
      d.addEventListener("toggle", () => { if (d.open) open.add(it.iterationNumber); else open.delete(it.iterationNumber); });
      return d;
    });
    iterationsBox.replaceChildren(...(items.length ? items : [h("p", { class: "muted" }, "No iteration yet.")]));
    const sum = session.summary || {};
    const lines = [];
    if (sum.ending && !["running", "idle"].includes(sum.status)) lines.push(h("p", { id: "ending" }, h("strong", {}, sum.ending), sum.standing ? ` — ${sum.standing}` : ""));
    if (sum.answer) lines.push(h("p", {}, h("strong", {}, "Answer: "), sum.answer));
    if (sum.plan && sum.plan.length) lines.push(h("div", {}, h("strong", {}, "Plan"), h("pre", {}, sum.plan.join("\n"))));
    for (const n of sum.notes || []) lines.push(h("p", { class: "muted" }, n));
    summaryBox.replaceChildren(...lines);
  }

  function eventText(e) {
    if (e.line) return e.line;
    const p = e.payload || {};
    switch (e.name) {
      case "agent:iteration:start": return `iteration ${p.iteration ?? ""} started`;
      case "agent:iteration:complete": return `iteration ${p.iteration ?? ""} ${p.status || "done"}`;
      case "agent:tool:called": return `→ ${p.toolName}`;
      case "agent:tool:complete": return `← ${p.toolName} (${p.duration} ms)`;
      case "agent:session:start": return "session started";
      case "agent:session:pause": return "paused";
      case "agent:session:resume": return "resumed";
      case "agent:step:error": return `${p.node} failed: ${p.error}`;
      case "agent:model:switched": return `${p.role}: ${p.from} → ${p.to}`;
      case "agent:session:terminate": return `terminated: ${p.reason || ""}`;
      case "agent:session:complete": return `completed (${p.finishReason || ""})`;
      case "agent:session:error": return `error: ${p.error || ""}`;
      case "agent:interrupt": return "waiting for an answer";
      default: return `${e.name} ${shorten(JSON.stringify(p), 160)}`;
    }
  }

  // Only the rows in view are in the DOM, so 10,000 events scroll smoothly.
  function renderEvents() {
    const stick = eventsBox.scrollTop + eventsBox.clientHeight >= spacer.offsetHeight - ROW * 2;
    spacer.style.height = `${events.length * ROW}px`;
    if (stick) eventsBox.scrollTop = spacer.offsetHeight;
    const first = Math.max(0, Math.floor(eventsBox.scrollTop / ROW) - 10);
    const last = Math.min(events.length, first + Math.ceil(eventsBox.clientHeight / ROW) + 20);
    const rows = [];
    for (let i = first; i < last; i++) {
      const e = events[i];
      rows.push(h("div", { class: "ev", style: `top:${i * ROW}px`, title: eventText(e), "data-seq": e.seq }, h("span", { class: "seq" }, e.seq), eventText(e)));
    }
    spacer.replaceChildren(...rows);
  }
  let frame = 0;
  const scheduleEvents = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; renderEvents(); }); };
  eventsBox.addEventListener("scroll", scheduleEvents);

  async function refetch() {
    try {
      session = await api(`/api/sessions/${encodeURIComponent(id)}`);
    } catch (e) {
      view.replaceChildren(h("p", { class: "error" }, e.message), h("a", { href: "#/" }, "← Sessions"));
      return;
    }
    const family = [];
    if (session.forkedFrom) family.push(h("div", { class: "muted", id: "forked-from" }, "Forked from ", h("a", { href: `#/s/${encodeURIComponent(session.forkedFrom.sessionId)}` }, session.forkedFrom.sessionId), ` at step ${session.forkedFrom.step}`));
    if ((session.forks || []).length) family.push(h("div", { class: "muted", id: "forks" }, "Forks: ", session.forks.flatMap((f) => [h("a", { href: `#/s/${encodeURIComponent(f.sessionId)}` }, f.sessionId), ` (step ${f.step}) `])));
    task.replaceChildren(session.task || "", ...family);
    renderProgress();
    renderIterations();
    showPending(session.pending);
  }
  const soon = () => { if (!refetchTimer) refetchTimer = setTimeout(() => { refetchTimer = null; refetch(); }, 250); };

  function showPending(p) {
    const overlay = $("#approval");
    if (!p) { overlay.hidden = true; lastPending = null; return; }
    if (lastPending === p.id) return;
    lastPending = p.id;
    const req = p.request || {};
    const reply = (value) => act("answer", { interruptId: p.id, reply: value }).then(() => { overlay.hidden = true; });
    if (req.kind === "continue_or_terminate") {
      overlay.hidden = true;
      toast(`Agent appears stuck: ${req.message || req.reason}. Continue or terminate?`, [["Continue", () => reply("continue")], ["Terminate", () => reply("terminate")]]);
      return;
    }
    // A decline's reason, given in the overlay, answers the follow-up question.
    if (declineReason !== null && !(req.choices || []).length) {
      const why = declineReason;
      declineReason = null;
      reply(why || "declined");
      return;
    }
    const options = req.choices || [];
    $("#approval-where").textContent = `Session ${session.sessionId} · iteration ${session.currentIteration}`;
    $("#approval-what").textContent = p.question || req.question || JSON.stringify(req, null, 2);
    const reason = $("#approval-reason");
    reason.value = "";
    const buttons = [];
    if (options.length) {
      const approve = options.includes("yes") ? "yes" : options.includes("all") ? "all" : options[0];
      buttons.push(h("button", { type: "button", class: "primary", id: "approve", onclick: () => reply(approve) }, "Approve"));
      if (options.includes("all") && approve !== "all") buttons.push(h("button", { type: "button", id: "approve-all", onclick: () => reply("all") }, "Approve for the session"));
      buttons.push(h("button", { type: "button", id: "decline", onclick: () => {
        const why = reason.value.trim();
        if (options.includes("no")) { declineReason = why; reply("no"); } else reply(why || "declined: plan again");
      } }, "Decline"));
      if (options.includes("cancel")) buttons.push(h("button", { type: "button", id: "cancel", class: "danger", onclick: () => reply("cancel") }, "Cancel"));
    } else {
      buttons.push(h("button", { type: "button", class: "primary", id: "send-answer", onclick: () => reply(reason.value) }, "Send"));
    }
    $("#approval-actions").replaceChildren(...buttons);
    overlay.hidden = false;
    (buttons[0] || reason).focus();
  }

  function openTerminate() {
    const dialog = $("#terminate-dialog");
    $("#terminate-form").onsubmit = (e) => {
      e.preventDefault();
      const data = new FormData(e.target);
      const ending = data.get("ending");
      act(ending === "completed" ? "complete" : "terminate", { ending, reason: data.get("reason") || "" });
      dialog.close();
    };
    dialog.showModal();
  }

  const opened = Date.now() - 1000;
  function liveToast(e) {
    const p = e.payload || {};
    if (e.name === "agent:session:complete") toast(`Session completed (${p.finishReason})`);
    if (e.name === "agent:session:error") toast(`Session error: ${p.error}`);
    if (e.name === "agent:session:terminate") {
      // A timeout ends the session as terminated with finish reason `timeout`.
      api(`/api/sessions/${encodeURIComponent(id)}`).then((s) => toast(s.finishReason === "timeout" ? "Agent timed out" : `Session terminated: ${p.reason}`)).catch(fail);
    }
  }

  const stream = new EventSource(`/api/sessions/${encodeURIComponent(id)}/events`);
  stream.onmessage = (m) => {
    const e = JSON.parse(m.data);
    events.push(e);
    scheduleEvents();
    if (session && e.name === "agent:iteration:start" && e.payload && e.payload.iteration) {
      session.currentIteration = e.payload.iteration;
      renderProgress();
    }
    // History replayed on opening a session raises no toasts; what happens now does.
    if (Date.parse(e.timestamp) >= opened) liveToast(e);
    soon();
  };
  stream.addEventListener("end", () => { stream.close(); soon(); });
  leave = () => { stream.close(); $("#approval").hidden = true; };
  refetch();
}

route();
