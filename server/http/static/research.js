// The research report on the page: its plan (an indented list by dependency, editable while
// the run waits for a review), each sub-question's progress, the report with numbered
// citations, and its downloads (Markdown, HTML, a JSON evidence bundle).

function depths(plan) {
  const byId = new Map(plan.map((s) => [s.id, s]));
  const memo = new Map();
  const depth = (id, seen = new Set()) => {
    if (memo.has(id)) return memo.get(id);
    if (seen.has(id) || !byId.has(id)) return 0; // a cycle is the server's to refuse
    seen.add(id);
    const d = 1 + Math.max(0, ...(byId.get(id).depends_on || []).map((x) => depth(x, seen)));
    memo.set(id, d);
    return d;
  };
  return new Map(plan.map((s) => [s.id, depth(s.id)]));
}

export function renderPlan(list, plan, { editable = false } = {}) {
  const depth = depths(plan);
  const ordered = [...plan].sort((a, b) => depth.get(a.id) - depth.get(b.id));
  list.replaceChildren(
    ...ordered.map((sub) => {
      const item = document.createElement("li");
      item.dataset.id = sub.id;
      item.style.marginLeft = `${(depth.get(sub.id) - 1) * 1.5}em`;
      const status = document.createElement("span");
      status.className = "sub-status";
      status.textContent = editable ? "" : "waiting";
      const after = (sub.depends_on || []).length ? ` (after ${sub.depends_on.join(", ")})` : "";
      if (editable) {
        const keep = document.createElement("input");
        keep.type = "checkbox";
        keep.checked = true;
        keep.setAttribute("aria-label", `Keep ${sub.id}`);
        const text = document.createElement("input");
        text.type = "text";
        text.value = sub.question;
        text.className = "sub-question";
        text.setAttribute("aria-label", `Sub-question ${sub.id}`);
        const note = document.createElement("span");
        note.className = "meta";
        note.textContent = `${sub.id}${after}`;
        item.append(keep, text, note);
      } else {
        const text = document.createElement("span");
        text.textContent = `${sub.id}: ${sub.question}${after} `;
        item.append(text, status);
      }
      return item;
    }),
  );
}

export function markSub(list, id, status) {
  const item = list.querySelector(`li[data-id="${CSS.escape(id)}"] .sub-status`);
  if (item) item.textContent = status;
}

// The person's edit of the plan, or null when they changed nothing.
export function editedPlan(list, plan) {
  let changed = false;
  const out = [];
  for (const sub of plan) {
    const item = list.querySelector(`li[data-id="${CSS.escape(sub.id)}"]`);
    if (!item) continue;
    const keep = item.querySelector("input[type=checkbox]").checked;
    const question = item.querySelector("input[type=text]").value.trim();
    if (!keep) {
      changed = true;
      continue;
    }
    if (question !== sub.question) changed = true;
    out.push({ ...sub, question });
  }
  return changed ? out : null;
}

// The report as the page renders it: "[n]" become "[src:id]" (the page's citation buttons),
// the reference definitions and the title (shown above it) are left out.
export function reportView(answer, references) {
  const byN = new Map(references.map((r) => [String(r.n), r]));
  const lines = answer.split("\n").filter((line) => !/^\[\d+\]: /.test(line));
  if (lines[0] && lines[0].startsWith("# ")) lines.shift();
  const text = lines
    .join("\n")
    .replace(/\[(\d+)\]/g, (match, n) => (byN.has(n) ? `[src:${byN.get(n).id}]` : match));
  const citations = references.map((r) => ({ authority: 0, deprecated: false, ...r }));
  return { text: text.trim(), citations };
}

function save(name, type, content) {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function download(format, report) {
  const { answer, references, plan, question } = report;
  if (format === "md") {
    save("report.md", "text/markdown", answer);
  } else if (format === "html") {
    // reference definitions would vanish in Markdown: shown as a list instead
    const markdown = answer.replace(/^\[(\d+)\]: (.*)$/gm, "\\[$1\\] $2  ");
    const body = window.DOMPurify.sanitize(window.marked.parse(markdown));
    const title = question.replace(/[<>&"]/g, "");
    save(
      "report.html",
      "text/html",
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>` +
        `<body><article>${body}</article></body></html>\n`,
    );
  } else {
    save(
      "report-evidence.json",
      "application/json",
      JSON.stringify({ request: question, report: answer, plan, references }, null, 2),
    );
  }
}
