// The task page: summary, convergence chart, rounds, agents, budget and the kind's own panel, live over the
// task's server-sent events (reconnecting with Last-Event-ID). Events are queued and rendered once per frame.
import { duration, el, EventStream, fmt, frameScheduler, getJSON, setText } from "./api.js";
import { ConvergenceChart } from "./chart.js";

const TERMINAL_POLL_MS = 1000;
const PREPARING_POLL_MS = 500;
const ROUND_ROWS_SHOWN = 20;
const TABLE_MS = 250;
const SUMMARY = [
  ["status", "status"], ["round", "round"], ["objective", "F"], ["gap", "gap"], ["relative_gap", "relative gap"],
  ["feasible", "feasible"], ["reference", "reference"], ["agents", "agents"], ["leases", "leases held"],
  ["merge_policy", "merging"], ["eta", "forecast ETA"], ["limit", "forecast limit"], ["age", "age"],
];
const ROUND_COLS = ["round", "gap", "F", "merged / received", "edges", "merge", "κ", "γ", "δ", "a priori",
                    "forecast", "rejected because", "regrouped"];
const AGENT_COLS = ["agent", "model", "blocks held (lease age)", "proposals", "accepted", "rejected", "abandoned",
                    "last verdict", "tokens", "calls"];

function table(id, columns) {
  const tbody = el("tbody");
  const t = el("table", { id }, el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", { text: c })))), tbody);
  return [t, tbody];
}

export class TaskPage {
  constructor(root, id, ui) {
    this.root = root; this.id = id; this.ui = ui; this.abort = new AbortController();
    this.pending = []; this.roundCells = new Map(); this.roundPage = 0;
    this.tableQueue = []; this.lastTable = 0; this.tableTimer = 0; this.lastBudget = 0; this.agentRows = new Map(); this.task = null;
    this.viewVersion = -1; this.kindHandle = null; this.kindModule = null; this.timer = null; this.stopped = false;
    this.lastReport = 0; this.authFailed = false;
    this.schedule = frameScheduler(() => this.render());
    window.blockoptStats = { roundEvents: 0 };  // read by the browser tests: a reconnect must replay nothing
  }

  start() {
    const summary = el("div", { class: "summary", id: "summary" });
    this.summary = Object.fromEntries(SUMMARY.map(([key, label]) => {
      const value = el("b", { id: `task-${key}` });
      summary.append(el("div", {}, el("span", { text: label }), value));
      return [key, value];
    }));
    this.title = el("h1", { text: this.id });
    const axis = el("select", { id: "chart-x", title: "x-axis", onchange: (e) => this.chart.setAxis(e.target.value) },
      el("option", { value: "rounds", text: "rounds" }), el("option", { value: "seconds", text: "seconds" }));
    const chartPanel = el("div", { class: "panel" }, el("h2", { text: "Convergence " }, axis));
    this.chart = new ConvergenceChart(chartPanel);
    chartPanel.append(el("div", { class: "legend" },
      el("span", {}, el("i", { style: "background:#2c6fbb" }), "gap per round"),
      el("span", {}, el("i", { style: "background:#2e8b57" }), "forecast hit"),
      el("span", {}, el("i", { style: "background:#c0392b" }), "forecast miss"),
      el("span", { text: "orange dashes and band: one-step forecast bound · purple ┆ regrouping · red dashes: forecast limit" })));
    const [rounds, roundBody] = table("rounds", ROUND_COLS);
    const [agents, agentBody] = table("agents", AGENT_COLS);
    this.roundBody = roundBody; this.agentBody = agentBody;
    this.budget = el("tbody");
    this.kindRoot = el("div", { id: "kind-view" });
    const panel = (title, ...body) => el("div", { class: "panel" }, el("h2", { text: title }), ...body);
    this.root.append(
      el("p", {}, el("a", { href: "#/", text: "← all tasks" })), this.title, summary,
      el("div", { class: "grid halves" }, chartPanel, panel("Solution", this.kindRoot)),
      el("div", { class: "grid" },
        panel("Agents", el("div", { class: "scroll" }, agents)),
        panel("Budget", el("table", { id: "budget" }, el("thead", {}, el("tr", {},
          ...["", "spent", "limit", ""].map((c) => el("th", { text: c })))), this.budget))),
      panel("Rounds", el("div", { class: "pager" },
        el("button", { id: "rounds-newer", text: "newer", onclick: () => this.showRoundPage(this.roundPage - 1) }),
        el("button", { id: "rounds-older", text: "older", onclick: () => this.showRoundPage(this.roundPage + 1) }),
        this.roundNote = el("span", { class: "muted" })), el("div", { class: "scroll" }, rounds)),
    );
    this.run();
  }

  stop() {
    this.stopped = true; this.abort.abort(); clearTimeout(this.timer);
    if (this.stream) this.stream.stop();
    if (this.kindHandle && this.kindHandle.destroy) this.kindHandle.destroy();
  }

  async run() {
    try {
      await this.refreshTask();
      // The kind is still preparing the task (reference, first plan): only its view answers until then.
      while (this.task.status === "preparing" && !this.stopped) {
        this.ui.connection("retry", "preparing…");
        await new Promise((resolve) => { this.timer = setTimeout(resolve, PREPARING_POLL_MS); });
        await this.refreshTask();
      }
      this.ui.connection("", "");
    } catch (e) {
      if (e.name !== "AbortError") this.ui.error(e);
      return;
    }
    if (this.stopped || (this.task.status === "failed" && this.task.blocks === null)) {
      return; // its preparation failed: the summary says why, and there is nothing else to show
    }
    this.stream = new EventStream(`/v1/tasks/${this.id}/events`, {
      onEvent: (type, data) => this.onEvent(type, data),
      onState: (s) => this.ui.connection(s, { live: "live", retry: "reconnecting…", ended: "ended" }[s]),
      onError: (e) => this.ui.error(e),
    });
    this.stream.run();
    this.poll();
  }

  onEvent(type, data) {
    if (type === "round") { this.pending.push(data); this.schedule(); window.blockoptStats.roundEvents += 1; }
    if (type === "status") this.refreshAll(true);
  }

  async poll() {
    if (this.stopped) return;
    await this.refreshAll(false);
    const ended = this.task && this.task.finished_at !== null;
    if (!ended) this.timer = setTimeout(() => this.poll(), TERMINAL_POLL_MS * 2);
  }

  async refreshAll(final) {
    try {
      await this.refreshTask();
      await Promise.all([this.refreshAgents(), this.refreshView(), this.refreshReport(final)]);
      if (!this.authFailed) this.ui.clear();
    } catch (e) {
      if (e.name !== "AbortError") this.ui.error(e);
    }
  }

  async guarded(work) {
    try { await work(); } catch (e) {
      if (e.name === "AbortError") return;
      if (e.isAuth) this.authFailed = true;
      this.ui.error(e);
      throw e;
    }
  }

  async refreshTask() {
    this.task = await getJSON(`/v1/tasks/${this.id}`, this.abort.signal);
    this.budgetDirty = true;
    this.schedule();
  }

  async refreshAgents() {
    return this.guarded(async () => {
      this.agents = await getJSON(`/v1/tasks/${this.id}/agents`, this.abort.signal);
      this.agentsDirty = true;
      this.schedule();
    });
  }

  async refreshReport(final) {
    const now = Date.now();
    if (!final && now - this.lastReport < 5000) return;
    this.lastReport = now;
    this.report = await getJSON(`/v1/tasks/${this.id}/report`, this.abort.signal);
    this.budgetDirty = true;
    this.schedule();
  }

  async refreshView() {
    if (!this.task || this.task.version === this.viewVersion) return;
    return this.guarded(async () => {
      const view = await getJSON(`/v1/tasks/${this.id}/view`, this.abort.signal);
      this.viewVersion = view.version;
      if (view.model === null || view.model === undefined || !view.renderer) {
        this.kindRoot.replaceChildren(el("p", { class: "muted", text: "This kind ships no view." }));
        return;
      }
      if (!this.kindModule) {
        this.kindModule = await import(view.renderer);
        this.kindHandle = this.kindModule.mount(this.kindRoot);
      }
      this.kindHandle.update(view.model);
    });
  }

  // One frame: queued rounds become chart points and table rows; summaries are rewritten cell by cell.
  render() {
    if (this.pending.length) {
      for (const row of this.pending) {
        if (this.chart.byRound.has(row.round)) continue;
        this.chart.add(row);
        this.tableQueue.push(row);
      }
      this.pending = [];
    }
    this.chart.render();
    this.flushTable();
    if (this.task) this.renderSummary(this.task);
    if (this.agents && this.agentsDirty) { this.agentsDirty = false; this.renderAgents(this.agents); }
    const now = performance.now();
    if (this.task && this.report && (this.budgetDirty || now - this.lastBudget > 1000)) {
      this.budgetDirty = false; this.lastBudget = now;
      this.renderBudget(this.task, this.report);
    }
  }

  // Tables are for reading, not animation: they take new rows at most every TABLE_MS (a table's layout and
  // repaint cost more than the rest of a frame), while the chart and the map move every frame.
  flushTable() {
    if (!this.tableQueue.length) return;
    const wait = this.lastTable + TABLE_MS - performance.now();
    if (wait > 0) {
      if (!this.tableTimer) this.tableTimer = setTimeout(() => { this.tableTimer = 0; this.schedule(); }, wait);
      return;
    }
    this.lastTable = performance.now();
    if (this.roundPage === 0) {
      const fragment = document.createDocumentFragment();
      for (const row of this.tableQueue.slice(-ROUND_ROWS_SHOWN)) fragment.prepend(this.roundRow(row));
      this.roundBody.prepend(fragment);
      this.trimRounds();
    }
    this.tableQueue = [];
    this.pagerLabel();
  }

  // The rounds table is a pager over the history: thousands of live rows would cost a table layout and a
  // repaint per frame, so the DOM holds one page (the newest, live, unless the user pages back).
  trimRounds() {
    while (this.roundBody.childElementCount > ROUND_ROWS_SHOWN) {
      const last = this.roundBody.lastElementChild;
      this.roundCells.delete(Number(last.dataset.round));
      last.remove();
    }
  }

  showRoundPage(page) {
    const rows = this.chart.rows, pages = Math.max(1, Math.ceil(rows.length / ROUND_ROWS_SHOWN));
    this.roundPage = Math.min(Math.max(0, page), pages - 1);
    const end = rows.length - this.roundPage * ROUND_ROWS_SHOWN;
    const slice = rows.slice(Math.max(0, end - ROUND_ROWS_SHOWN), end).reverse();
    this.roundCells.clear();
    this.roundBody.replaceChildren(...slice.map((r) => this.roundRow(r)));
    this.pagerLabel();
  }

  pagerLabel() {
    const n = this.chart.count, end = n - this.roundPage * ROUND_ROWS_SHOWN;
    const start = Math.max(0, end - ROUND_ROWS_SHOWN);
    setText(this.roundNote, n ? `rounds ${start}–${end - 1} of ${n}${this.roundPage === 0 ? " (live)" : ""}` : "");
  }

  roundRow(r) {
    // the a priori bound from problem data (kinds that state one), where its precondition held this round
    const bound = r.a_priori_held === true ? "held" : r.a_priori_held === false ? "failed" : "–";
    const forecast = r.predicted_gap === undefined || r.predicted_gap === null ? "–"
      : `≤ ${fmt(r.predicted_gap)} ${r.hit === true ? "hit" : r.hit === false ? "miss" : ""}`;
    const cells = [String(r.round), fmt(r.gap), fmt(r.objective, 6), `${r.accepted} / ${r.proposals}`,
                   String(r.interfering), r.merge_kind, fmt(r.kappa), fmt(r.gamma), fmt(r.delta), bound, forecast,
                   "", r.regrouped ? "yes" : ""].map((text) => el("td", { text }));
    cells[5].className = "text"; cells[11].className = "wrap";
    cells[11].textContent = this.rejections(r.round);
    this.roundCells.set(r.round, cells[11]);
    return el("tr", { "data-round": r.round }, ...cells);
  }

  renderSummary(t) {
    const s = this.summary;
    setText(this.title, t.name);
    const status = t.reason && t.status === "failed" && t.blocks === null ? `${t.status}: ${t.reason}` : t.status;
    if (s.status.textContent !== status) {
      s.status.textContent = status; s.status.className = `status ${t.status}`;
    }
    setText(s.round, String(t.round)); setText(s.objective, fmt(t.objective, 6)); setText(s.gap, fmt(t.gap));
    setText(s.relative_gap, fmt(t.relative_gap)); setText(s.feasible, t.feasible === null ? "–" : t.feasible ? "yes" : "no");
    setText(s.reference, t.reference === null ? "–" : `${fmt(t.reference, 6)} (${t.reference_kind})`);
    setText(s.agents, String(t.agents)); setText(s.leases, String(t.leases));
    setText(s.merge_policy, `${t.merge_policy}, ${t.mode}`);
    const f = t.forecast || (this.report && this.report.forecast) || null;
    setText(s.eta, f && t.finished_at === null ? `${fmt(f.eta_rounds)} rounds, ${duration(f.eta_seconds)}` : "–");
    setText(s.limit, f && f.limit !== undefined && f.limit !== null ? fmt(f.limit, 6) : "–");
    this.chart.setLimit(f && f.limit !== null && f.limit !== undefined && t.reference !== null ? f.limit - t.reference : null);
    setText(s.age, duration((t.finished_at ?? Date.now() / 1000) - t.created_at));
  }

  rejections(round) {
    const reasons = this.agents ? this.agents.rejected_by_round[String(round)] : null;
    return reasons ? Object.entries(reasons).map(([code, n]) => `${code} ×${n}`).join(", ") : "";
  }

  renderAgents(view) {
    for (const a of view.agents) {
      let row = this.agentRows.get(a.id);
      if (!row) {
        row = AGENT_COLS.map((_, i) => el("td", { class: i === 0 || i === 1 || i === 2 || i === 7 ? "text" : "" }));
        this.agentRows.set(a.id, row);
        this.agentBody.append(el("tr", { "data-agent": a.id }, ...row));
      }
      const held = a.leases.map((l) => `${l.block} (${l.age.toFixed(1)} s)`).join(", ") || "–";
      const v = a.last_verdict;
      const verdict = v ? `${v.status}: ${v.code} (block ${v.block}, round ${v.round ?? "–"})` : "–";
      [a.name, a.model, held, String(a.proposals), String(a.accepted), String(a.rejected), String(a.abandoned),
       verdict, fmt(a.tokens), fmt(a.calls)].forEach((text, i) => setText(row[i], text));
      if (v) row[7].title = v.reason;
    }
    for (const [round, cell] of this.roundCells) setText(cell, this.rejections(round));
  }

  renderBudget(t, report) {
    const b = t.budgets, u = report.usage || {};
    const elapsed = (t.finished_at ?? Date.now() / 1000) - t.created_at;
    const lines = [["rounds", t.round, b.rounds], ["seconds", elapsed, b.seconds],
                   ["tokens", u.tokens ?? t.usage.tokens, b.tokens], ["calls", u.calls ?? t.usage.calls, b.calls]];
    const per = u.tokens_per_unit_improvement;
    const gain = (t.forecast || report.forecast || {}).gain_per_1k_tokens;
    const rows = lines.map(([name, spent, limit]) => {
      const frac = limit ? spent / limit : null;
      const bar = el("div", { class: `bar ${frac !== null && frac > 1 ? "over" : ""}` },
                     el("div", { style: `width:${Math.min(100, 100 * (frac ?? 0)).toFixed(1)}%` }));
      return el("tr", {}, el("td", { class: "text", text: name }), el("td", { text: fmt(spent) }),
                el("td", { text: limit ? fmt(limit) : "none" }), el("td", {}, frac === null ? "" : bar));
    });
    rows.push(el("tr", {}, el("td", { class: "text", text: "tokens per unit improvement" }),
                 el("td", { text: per === null || per === undefined ? "–" : fmt(per) }), el("td"), el("td")));
    if (gain !== undefined) {
      rows.push(el("tr", {}, el("td", { class: "text", text: "forecast gain per 1k tokens" }),
                   el("td", { text: fmt(gain) }), el("td"), el("td")));
    }
    const key = rows.map((r) => r.textContent).join("|");
    if (key !== this.budgetKey) { this.budgetKey = key; this.budget.replaceChildren(...rows); }
  }
}
