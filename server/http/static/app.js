// seekgraph's page: sign in, ask, watch the agent work, read cited answers, resume on reload.
// No build step: plain ES module; Markdown by marked, sanitised by DOMPurify (vendored).

import { download, editedPlan, markSub, renderPlan, reportView } from "./research.js";

const $ = (id) => document.getElementById(id);
const MAX_IMAGES = 6;
const MAX_IMAGE_BYTES = 5_000_000;
const KEY = "seekgraph.key";
const LIVE = "seekgraph.live"; // {thread, lastId, question} while a stream is open (per tab)

const view = {
  me: null,
  thread: null,
  images: [], // {name, type, data (base64), url}
  answer: "",
  citations: [],
  lastId: null,
  abort: null,
  plan: null, // the research plan on screen
  report: null, // {question, answer, references, plan} of a finished research report
};

// ---------- API ----------

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${localStorage.getItem(KEY) || ""}`, ...extra };
}

async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: headers(body ? { "Content-Type": "application/json" } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch {
    throw new ApiError(0, "The server cannot be reached. Check your connection and try again.");
  }
  if (!response.ok) throw new ApiError(response.status, await problem(response));
  return response.json();
}

async function problem(response) {
  try {
    const data = await response.json();
    if (typeof data.detail === "string") return plainWords(response.status, data.detail);
  } catch { /* not JSON */ }
  return plainWords(response.status, response.statusText);
}

function plainWords(status, detail) {
  if (status === 401) return "That API key was not accepted. Check it and sign in again.";
  if (status === 404) return "That thread does not exist, or it is not yours.";
  if (status === 409) return "An answer is still being written in this thread. Wait for it to finish.";
  if (status === 503) return "The service is temporarily unavailable. Try again in a moment.";
  return detail.charAt(0).toUpperCase() + detail.slice(1) + (detail.endsWith(".") ? "" : ".");
}

// ---------- SSE over fetch (so we can send the API key and Last-Event-ID) ----------

async function streamEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const raw = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const frame = { id: null, event: "message", data: "" };
      for (const line of raw.split("\n")) {
        if (line.startsWith(":")) continue; // heartbeat
        const at = line.indexOf(": ");
        const field = at < 0 ? line : line.slice(0, at);
        const text = at < 0 ? "" : line.slice(at + 2);
        if (field === "id") frame.id = text;
        else if (field === "event") frame.event = text;
        else if (field === "data") frame.data += text;
      }
      if (frame.data) onEvent(frame.event, JSON.parse(frame.data), frame.id);
    }
  }
}

// ---------- sign in ----------

async function signIn() {
  $("sign-in").hidden = true;
  try {
    view.me = await api("GET", "/me");
  } catch (error) {
    showSignIn(error.message);
    return;
  }
  $("who").textContent = `Signed in as ${view.me.display_name}`;
  $("sign-out").hidden = false;
  $("app").hidden = false;
  renderSources();
  await loadThreads();
  const live = JSON.parse(sessionStorage.getItem(LIVE) || "null");
  if (live && live.user === view.me.user) {
    await openThread(live.thread, { keepLive: true });
    showQuestion(live.question);
    await attach(live.thread, live.lastId);
  }
}

function showSignIn(message) {
  $("app").hidden = true;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  $("sign-in").hidden = false;
  $("sign-in-error").hidden = !message;
  $("sign-in-error").textContent = message || "";
  $("api-key").focus();
}

// ---------- sources ----------

function sourceKey() {
  return `seekgraph.sources.${view.me.user}`;
}

function renderSources() {
  const off = new Set(JSON.parse(localStorage.getItem(sourceKey()) || "[]"));
  const box = $("sources");
  box.querySelectorAll("label").forEach((l) => l.remove());
  for (const source of view.me.sources) {
    const label = document.createElement("label");
    const box_ = document.createElement("input");
    box_.type = "checkbox";
    box_.name = "source";
    box_.value = source.name;
    box_.checked = !off.has(source.name);
    box_.addEventListener("change", saveSources);
    label.append(box_, ` ${source.name}`);
    label.title = kindLabel(source.kind);
    box.append(label);
  }
}

function saveSources() {
  const off = [...document.querySelectorAll('input[name="source"]:not(:checked)')].map((b) => b.value);
  localStorage.setItem(sourceKey(), JSON.stringify(off));
}

function chosenSources() {
  return [...document.querySelectorAll('input[name="source"]:checked')].map((b) => b.value);
}

// ---------- images ----------

function sniff(bytes) {
  const b = bytes;
  if (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return "image/png";
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b[0] === 0x47 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x38) return "image/gif";
  if (b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 &&
      b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return "image/webp";
  return null;
}

async function addImages(files) {
  const problems = [];
  for (const file of files) {
    if (view.images.length >= MAX_IMAGES) {
      problems.push(`At most ${MAX_IMAGES} images can be attached; “${file.name}” was not added.`);
      continue;
    }
    if (file.size > MAX_IMAGE_BYTES) {
      problems.push(`“${file.name}” is ${(file.size / 1e6).toFixed(1)} MB; the limit is 5 MB.`);
      continue;
    }
    const bytes = new Uint8Array(await file.arrayBuffer());
    const type = sniff(bytes);
    if (!type) {
      problems.push(`“${file.name}” is not a PNG, JPEG, WebP or GIF image, whatever its name says.`);
      continue;
    }
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    }
    view.images.push({ name: file.name, type, data: btoa(binary), url: URL.createObjectURL(file) });
  }
  renderPreviews();
  showError("ask-error", problems.join(" "));
}

function renderPreviews() {
  const list = $("previews");
  list.replaceChildren();
  view.images.forEach((image, i) => {
    const item = document.createElement("li");
    const img = document.createElement("img");
    img.src = image.url;
    img.alt = image.name;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "×";
    remove.setAttribute("aria-label", `Remove ${image.name}`);
    remove.addEventListener("click", () => {
      view.images.splice(i, 1);
      renderPreviews();
    });
    item.append(img, remove);
    list.append(item);
  });
}

// ---------- threads ----------

async function loadThreads() {
  const threads = await api("GET", "/threads");
  const list = $("thread-list");
  list.replaceChildren();
  for (const t of threads) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = t.title || "Untitled thread";
    if (t.created_at) {
      const when = document.createElement("time");
      when.dateTime = t.created_at;
      when.textContent = new Date(t.created_at).toLocaleString([], {
        dateStyle: "medium",
        timeStyle: "short",
      });
      button.append(when);
    }
    button.dataset.thread = t.thread_id;
    button.setAttribute("aria-current", String(t.thread_id === view.thread));
    button.addEventListener("click", () => openThread(t.thread_id));
    item.append(button);
    list.append(item);
  }
}

async function openThread(threadId, { keepLive = false } = {}) {
  if (!keepLive) stopStream();
  view.thread = threadId;
  document.querySelectorAll("#thread-list button").forEach((b) =>
    b.setAttribute("aria-current", String(b.dataset.thread === threadId)));
  resetCurrent();
  $("current").hidden = true;
  const turnsBox = $("turns");
  turnsBox.replaceChildren();
  let state;
  try {
    state = await api("GET", `/threads/${threadId}/state`);
  } catch (error) {
    showError("ask-error", error.message);
    return;
  }
  const values = state.values || {};
  const turns = values.turns || [];
  const last = turns.length - 1;
  turns.forEach((turn, i) => {
    if (i === last && !keepLive) return; // the last one is shown in full below
    const box = document.createElement("div");
    box.className = "turn";
    const h = document.createElement("h3");
    h.textContent = turn.question;
    const body = document.createElement("div");
    body.innerHTML = renderMarkdown(turn.answer, [], { fresh: true });
    box.append(h, body);
    turnsBox.append(box);
  });
  if (!keepLive && turns.length) {
    showQuestion(values.question);
    view.citations = values.citations || [];
    view.answer = values.answer || "";
    renderAnswer();
    renderOutcome(values);
    $("progress-status").textContent = "(from history)";
    $("progress").open = false;
  }
}

// ---------- asking and streaming ----------

function archiveCurrent() {
  if ($("current").hidden || !view.answer) return;
  const box = document.createElement("div");
  box.className = "turn";
  const h = document.createElement("h3");
  h.textContent = $("current-question").textContent;
  const body = document.createElement("div");
  body.innerHTML = renderMarkdown(view.answer, [], { fresh: true });
  box.append(h, body);
  $("turns").append(box);
}

function resetCurrent() {
  view.answer = "";
  view.citations = [];
  view.plan = null;
  view.report = null;
  $("plan").hidden = true;
  $("plan-actions").hidden = true;
  $("plan-error").hidden = true;
  $("downloads").hidden = true;
  $("timeline").replaceChildren();
  $("answer").replaceChildren();
  $("conflicts").hidden = true;
  $("missing").hidden = true;
  $("run-error").hidden = true;
  $("progress").open = true;
  $("progress-status").textContent = "";
  closeSource();
}

function showQuestion(question) {
  $("current").hidden = false;
  $("current-question").textContent = question || "";
}

function stopStream() {
  if (view.abort) view.abort.abort();
  view.abort = null;
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) {
    showError("ask-error", "Type a question first.");
    return;
  }
  const sources = chosenSources();
  if (!sources.length) {
    showError("ask-error", "Choose at least one source to search.");
    return;
  }
  showError("ask-error", "");
  stopStream();
  try {
    if (!view.thread) {
      view.thread = (await api("POST", "/threads")).thread_id;
    }
  } catch (error) {
    showError("ask-error", error.message);
    return;
  }
  const body = { question, sources, images: view.images.map((i) => i.data) };
  if ($("flow").value === "research") {
    body.flow = "research";
    body.review_before_answer = $("review-plan").checked;
  }
  archiveCurrent(); // the previous question and answer stay on the page above the new one
  resetCurrent();
  showQuestion(question);
  $("ask").disabled = true;
  rememberLive(view.thread, null, question);
  const controller = new AbortController();
  view.abort = controller;
  let response;
  try {
    response = await fetch(`/threads/${view.thread}/runs`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
  } catch {
    $("ask").disabled = false;
    return reconnect(view.thread);
  }
  if (!response.ok) {
    $("ask").disabled = false;
    forgetLive();
    showError("ask-error", await problem(response));
    $("current").hidden = true;
    return;
  }
  $("question").value = "";
  view.images = [];
  renderPreviews();
  await consume(response, view.thread, controller);
  loadThreads();
}

async function attach(threadId, lastId) {
  stopStream();
  const controller = new AbortController();
  view.abort = controller;
  let response;
  try {
    response = await fetch(`/threads/${threadId}/stream`, {
      headers: headers(lastId ? { "Last-Event-ID": lastId } : {}),
      signal: controller.signal,
    });
  } catch {
    return reconnect(threadId);
  }
  if (!response.ok) {
    forgetLive();
    showError("run-error", await problem(response));
    return;
  }
  await consume(response, threadId, controller);
}

let retries = 0;
function reconnect(threadId) {
  if (retries >= 5) {
    showError("run-error", "The connection was lost. Reload the page to see the answer.");
    return;
  }
  retries += 1;
  $("progress-status").textContent = "(reconnecting…)";
  setTimeout(() => attach(threadId, view.lastId), 500 * retries);
}

async function consume(response, threadId, controller) {
  $("answer").setAttribute("aria-busy", "true");
  $("progress-status").textContent = "(working…)";
  let ended = false;
  try {
    await streamEvents(response, (type, data, id) => {
      if (id) {
        view.lastId = id;
        rememberLive(threadId, id);
        showStop(threadId, id.split(":")[0], type !== "end");
      }
      if (type === "end") ended = true;
      handle(type, data);
    });
  } catch {
    if (controller.signal.aborted) return;
  }
  showStop(threadId, null, false);
  $("answer").setAttribute("aria-busy", "false");
  $("ask").disabled = false;
  if (ended) {
    retries = 0;
    forgetLive();
  } else if (!controller.signal.aborted) {
    reconnect(threadId);
  }
}

// The run being shown can be stopped: its saved steps stay (a research run keeps the
// sub-questions it finished), and the stream ends with "cancelled".
function showStop(threadId, runId, live) {
  view.live = live ? { thread: threadId, run: runId } : null;
  $("stop").hidden = !live;
  $("stop").disabled = false;
}

// "Stopping" is said before asking: the stream's end can arrive before the cancel's reply,
// and must not be overwritten by it.
async function stopRun() {
  if (!view.live) return;
  const live = view.live;
  $("stop").disabled = true;
  $("progress-status").textContent = "(stopping…)";
  try {
    await api("POST", `/threads/${live.thread}/runs/${live.run}/cancel`);
  } catch (error) {
    if (view.live === live) {
      $("stop").disabled = false;
      $("progress-status").textContent = "";
    }
    showError("run-error", error.message);
  }
}

function handle(type, data) {
  switch (type) {
    case "snapshot":
      // Everything so far, folded: replace the view with it, then append what follows.
      $("timeline").replaceChildren();
      for (const step of data.steps || []) addStep(step.node, step.summary);
      view.answer = data.answer || "";
      view.citations = data.citations || [];
      if (data.references) showReport(data);
      if (data.status === "waiting") reviewPlan((data.interrupts || [])[0]);
      renderAnswer();
      if (data.status && data.status !== "running") {
        renderOutcome(data);
        $("progress-status").textContent = "";
      }
      break;
    case "node":
      addStep(data.node, data.summary);
      planProgress(data);
      break;
    case "waiting":
      reviewPlan((data.interrupts || [])[0]);
      break;
    case "token":
      view.answer += data.text;
      scheduleRender();
      break;
    case "answer":
      if (data.references) {
        showReport(data);
      } else {
        view.answer = data.answer || "";
        view.citations = data.citations || [];
      }
      renderAnswer();
      renderOutcome(data);
      break;
    case "error":
      showError("run-error", plainWords(500, data.message || "something went wrong"));
      break;
    case "end":
      $("progress-status").textContent = {
        done: "(done)", cancelled: "(stopped — what it found so far is kept)",
      }[data.status] || `(${data.status})`;
      $("progress").open = false;
      break;
    default:
      break; // node_start, sources: the timeline shows finished steps
  }
}

// ---------- research ----------

function planProgress(data) {
  const detail = data.detail || {};
  if (data.node === "plan_research" && detail.plan) {
    view.plan = detail.plan;
    $("plan").hidden = false;
    renderPlan($("plan-list"), detail.plan);
  } else if (data.node === "research_one" && detail.id) {
    markSub($("plan-list"), detail.id, "done");
  } else if (data.node === "schedule") {
    for (const id of detail.skipped || []) markSub($("plan-list"), id, "skipped");
  } else if (data.node === "review_plan") {
    $("plan-actions").hidden = true;
  } else if (data.node === "plan_gaps" && (detail.added || []).length) {
    // one more round for what the report lacked: its sub-questions join the list
    const done = [...$("plan-list").querySelectorAll("li")].map((li) => [
      li.dataset.id,
      li.querySelector(".sub-status")?.textContent || "",
    ]);
    view.plan = [...(view.plan || []), ...detail.added];
    renderPlan($("plan-list"), view.plan);
    for (const [id, status] of done) if (status) markSub($("plan-list"), id, status);
  }
}

function reviewPlan(interrupt) {
  const asked = interrupt && interrupt.value;
  if (!asked || !asked.plan) return;
  view.plan = asked.plan;
  $("plan").hidden = false;
  renderPlan($("plan-list"), asked.plan, { editable: true });
  const e = asked.estimate || {};
  $("plan-estimate").textContent =
    `${e.sub_questions} sub-questions, about ${e.seconds} s` + (e.tokens ? `, ${e.tokens} tokens` : "");
  showError("plan-error", asked.error ? `That plan cannot run: ${asked.error}` : "");
  $("plan-actions").hidden = false;
  $("progress-status").textContent = "(waiting for your review)";
}

async function resume(value) {
  $("plan-actions").hidden = true;
  showError("plan-error", "");
  stopStream();
  const controller = new AbortController();
  view.abort = controller;
  const response = await fetch(`/threads/${view.thread}/resume`, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify({ resume: value }),
    signal: controller.signal,
  });
  if (!response.ok) {
    $("plan-actions").hidden = false;
    showError("plan-error", await problem(response));
    return;
  }
  renderPlan($("plan-list"), value.plan || view.plan);
  await consume(response, view.thread, controller);
}

function showReport(data) {
  const { text, citations } = reportView(data.answer || "", data.references || []);
  view.answer = text;
  view.citations = citations;
  view.report = {
    question: $("current-question").textContent,
    answer: data.answer || "",
    references: data.references || [],
    plan: view.plan,
  };
  $("downloads").hidden = false;
}

function addStep(node, summary) {
  const item = document.createElement("li");
  const name = document.createElement("span");
  name.className = "node";
  name.textContent = node.replaceAll("_", " ");
  item.append(name, ` — ${summary}`);
  $("timeline").append(item);
}

let renderPending = false;
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    renderAnswer();
  });
}

function rememberLive(thread, lastId, question) {
  const previous = JSON.parse(sessionStorage.getItem(LIVE) || "{}");
  sessionStorage.setItem(LIVE, JSON.stringify({
    user: view.me.user, thread, lastId, question: question ?? previous.question,
  }));
}

function forgetLive() {
  sessionStorage.removeItem(LIVE);
}

// ---------- rendering ----------

// One numbering for the whole answer: the answer first, then conflicts, in order of appearance.
let numbers = new Map();

function numberCitations(text) {
  for (const match of text.matchAll(/\[src:([^\]\s]+)\]/g)) {
    if (!numbers.has(match[1])) numbers.set(match[1], numbers.size + 1);
  }
}

function renderMarkdown(text, citations, { fresh = false } = {}) {
  if (fresh) numbers = new Map();
  numberCitations(text);
  const known = new Set(citations.map((c) => c.id));
  const withCites = text.replace(/\[src:([^\]\s]+)\]/g, (_, id) => {
    const n = numbers.get(id);
    const label = known.has(id) ? `Source ${n}` : `Source ${n} (pending)`;
    return `<button type="button" class="cite" data-cite="${encodeURIComponent(id)}" aria-label="${label}">${n}</button>`;
  });
  const html = window.marked.parse(withCites, { breaks: true });
  return window.DOMPurify.sanitize(html, { ADD_ATTR: ["data-cite"] });
}

function renderAnswer() {
  $("answer").innerHTML = renderMarkdown(view.answer, view.citations, { fresh: true });
}

function renderOutcome(data) {
  const conflicts = data.conflicts || [];
  $("conflicts").hidden = !conflicts.length;
  $("conflict-list").replaceChildren(...conflicts.map((c) => {
    const item = document.createElement("li");
    const [a, b] = c.claims;
    item.innerHTML = window.DOMPurify.sanitize(renderMarkdown(
      `“${a.text}” [src:${a.id}] versus “${b.text}” [src:${b.id}]. ` +
        (c.trust ? `Trust [src:${c.trust}]: ${c.reason}.` : `${c.reason}.`),
      view.citations));
    return item;
  }));
  const missing = data.unanswered || [];
  $("missing").hidden = !missing.length;
  $("missing-list").replaceChildren(...missing.map((m) => {
    const item = document.createElement("li");
    item.textContent = m;
    return item;
  }));
}

function kindLabel(kind) {
  return {
    kb: "knowledge base", docs: "document", messages: "message", notes: "meeting note", web: "web page",
  }[kind] || kind;
}

function webDomain(citation) {
  // A web citation's host (www. dropped), or "" for anything else.
  if (citation.kind !== "web" || typeof citation.url !== "string") return "";
  try {
    return new URL(citation.url).hostname.replace(/^www\./, "");
  } catch {
    return "";
  }
}

const TIERS = { 3: "most authoritative", 2: "authoritative", 1: "informal" };

function quotedFor(id) {
  // The sentence of the answer that carries this citation: what to highlight in the source.
  for (const line of view.answer.split("\n")) {
    const at = line.indexOf(`[src:${id}]`);
    if (at >= 0) {
      return line.slice(0, at).replace(/^\s*[-*]\s*/, "").replace(/\[src:[^\]]+\]/g, "").trim();
    }
  }
  return "";
}

function quoteIn(passage, line) {
  // Where the quoted sentence sits in its passage: the answer line may add "(out of date)"
  // or say whose ("sam: …") or which option ("OPT_X: …") it is.
  const stripped = line.replace(/^\(out of date\)\s*/, "");
  for (const quote of [stripped, stripped.replace(/^[^:\n]{1,60}:\s*/, "")]) {
    const at = quote ? passage.indexOf(quote) : -1;
    if (at >= 0) return [quote, at];
  }
  return ["", -1];
}

function showSource(id) {
  const citation = view.citations.find((c) => c.id === id);
  if (!citation) return;
  $("source-title").textContent = citation.title;
  const updated = citation.updated_at ? `updated ${citation.updated_at.slice(0, 10)}` : "no date";
  const domain = webDomain(citation);
  $("source-meta").textContent = domain
    // a web page: where it lives and when it was read, not an authority tier
    ? `web page · ${domain} · fetched ${(citation.fetched_at || "").slice(0, 10) || "unknown"}`
    : `${kindLabel(citation.kind)} · ${citation.source} · ${TIERS[citation.authority] || ""} · ${updated}`;
  const badges = $("source-badges");
  badges.replaceChildren();
  if (citation.deprecated) {
    const badge = document.createElement("span");
    badge.className = "badge deprecated";
    badge.textContent = citation.superseded_by ? "deprecated — superseded" : "deprecated";
    badges.append(badge);
  }
  const tier = document.createElement("span");
  tier.className = "badge";
  tier.textContent = kindLabel(citation.kind);
  badges.append(tier);
  // The passage rendered as Markdown (sanitised), the quoted sentence highlighted.
  let text = citation.snippet;
  const [quote, at] = quoteIn(text, quotedFor(id));
  if (at >= 0) {
    text = `${text.slice(0, at)}<mark>${text.slice(at, at + quote.length)}</mark>${text.slice(at + quote.length)}`;
  }
  $("source-snippet").innerHTML = window.DOMPurify.sanitize(window.marked.parse(text));
  const link = $("source-link");
  // only links a person may open: a javascript: or data: url never becomes a link
  const openable = typeof citation.url === "string" && /^(https?:|mailto:)/i.test(citation.url);
  link.hidden = !openable;
  if (openable) link.href = citation.url;
  link.textContent = domain ? `Open ${domain}` : "Open the source";
  $("source-panel").hidden = false;
  $("source-panel").dataset.doc = citation.doc_id;
  $("app").classList.add("has-source");
  $("source-panel").focus();
}

function closeSource() {
  $("source-panel").hidden = true;
  $("app").classList.remove("has-source");
}

function showError(id, message) {
  $(id).hidden = !message;
  $(id).textContent = message || "";
}

// ---------- wiring ----------

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    localStorage.setItem(KEY, $("api-key").value.trim());
    $("api-key").value = "";
    signIn();
  });
  $("sign-out").addEventListener("click", () => {
    stopStream();
    localStorage.removeItem(KEY);
    forgetLive();
    view.thread = null;
    // nothing of this user's stays in the page for the next one, not even hidden
    $("thread-list").replaceChildren();
    $("turns").replaceChildren();
    resetCurrent();
    $("current-question").textContent = "";
    $("current").hidden = true;
    showSignIn("");
  });
  $("new-thread").addEventListener("click", () => {
    stopStream();
    view.thread = null;
    $("turns").replaceChildren();
    $("current").hidden = true;
    document.querySelectorAll("#thread-list button").forEach((b) => b.setAttribute("aria-current", "false"));
    $("question").focus();
  });
  $("ask-form").addEventListener("submit", ask);
  $("stop").addEventListener("click", stopRun);
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("ask-form").requestSubmit();
  });
  $("images").addEventListener("change", (event) => {
    addImages([...event.target.files]);
    event.target.value = "";
  });
  $("question").addEventListener("paste", (event) => {
    const files = [...event.clipboardData.files];
    if (files.length) {
      event.preventDefault();
      addImages(files);
    }
  });
  $("ask-form").addEventListener("dragover", (event) => event.preventDefault());
  $("ask-form").addEventListener("drop", (event) => {
    event.preventDefault();
    addImages([...event.dataTransfer.files]);
  });
  document.addEventListener("click", (event) => {
    const cite = event.target.closest(".cite");
    if (cite) showSource(decodeURIComponent(cite.dataset.cite));
  });
  $("close-source").addEventListener("click", closeSource);
  $("flow").addEventListener("change", () => {
    document.querySelector(".review-plan").hidden = $("flow").value !== "research";
  });
  $("approve-plan").addEventListener("click", () => {
    const edited = editedPlan($("plan-list"), view.plan || []);
    resume(edited ? { plan: edited } : { approve: true });
  });
  $("replan").addEventListener("click", () => {
    const comment = $("replan-comment").value.trim();
    if (!comment) return showError("plan-error", "Say what the plan should change first.");
    resume({ replan: comment });
  });
  $("downloads").addEventListener("click", (event) => {
    const button = event.target.closest("[data-download]");
    if (button && view.report) download(button.dataset.download, view.report);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("source-panel").hidden) closeSource();
  });
  if (localStorage.getItem(KEY)) signIn();
  else showSignIn("");
});
