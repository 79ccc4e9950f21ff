// The task list: one row per task, polled every 2 s; rows are keyed by id and only changed cells are written.
import { duration, el, fmt, getJSON, setText } from "./api.js";

const COLUMNS = [
  ["status", "text"], ["kind", "text"], ["name", "text"], ["gap", ""], ["forecast ETA", ""],
  ["agents", ""], ["tokens", ""], ["age", ""],
];

export class TaskList {
  constructor(root, ui) {
    this.root = root; this.ui = ui; this.rows = new Map(); this.timer = null; this.abort = new AbortController();
  }
  start() {
    this.tbody = el("tbody");
    this.empty = el("p", { class: "muted", text: "No tasks yet." });
    this.root.append(
      el("h1", { text: "Tasks" }),
      el("table", { id: "task-list" },
        el("thead", {}, el("tr", {}, ...COLUMNS.map(([name, cls]) => el("th", { class: cls, text: name })))),
        this.tbody),
      this.empty,
    );
    this.poll();
  }
  stop() { clearTimeout(this.timer); this.abort.abort(); }
  async poll() {
    try {
      const { tasks } = await getJSON("/v1/tasks", this.abort.signal);
      this.ui.clear();
      this.render(tasks);
    } catch (e) {
      if (e.name === "AbortError") return;
      this.ui.error(e);
    }
    this.timer = setTimeout(() => this.poll(), 2000);
  }
  render(tasks) {
    const now = Date.now() / 1000;
    const seen = new Set();
    tasks.sort((a, b) => b.created_at - a.created_at);
    for (const t of tasks) {
      seen.add(t.id);
      let row = this.rows.get(t.id);
      if (!row) {
        const cells = COLUMNS.map(([, cls]) => el("td", { class: cls }));
        const tr = el("tr", { class: "clickable", "data-task": t.id }, ...cells);
        tr.addEventListener("click", () => { location.hash = `#/tasks/${t.id}`; });
        row = { tr, cells };
        this.rows.set(t.id, row);
      }
      this.tbody.append(row.tr); // keeps order; moving an existing node is cheap
      const c = row.cells;
      if (c[0].firstChild?.textContent !== t.status) {
        c[0].replaceChildren(el("span", { class: `status ${t.status}`, text: t.status }));
      }
      setText(c[1], t.kind);
      if (!c[2].firstChild) c[2].append(el("a", { href: `#/tasks/${t.id}`, text: t.name }));
      setText(c[3], fmt(t.gap));
      setText(c[4], t.forecast && t.status === "running" ? duration(t.forecast.eta_seconds) : "–");
      setText(c[5], String(t.agents));
      setText(c[6], fmt(t.usage?.tokens ?? 0));
      setText(c[7], duration((t.finished_at ?? now) - t.created_at));
    }
    for (const [id, row] of this.rows) if (!seen.has(id)) { row.tr.remove(); this.rows.delete(id); }
    this.empty.hidden = tasks.length > 0;
  }
}
