// The sqlplan panel of blockopt's web UI: per-query cost bars (log scale) of the team's plans against each
// measured baseline (SQLite's own plan, ANALYZE, .expert), and the index set's size against its budget.
const NS = "http://www.w3.org/2000/svg";
const COLOURS = ["#8c8c8c", "#d68910", "#8e44ad", "#16a085", "#2c3e50", "#2c6fbb"];

function s(tag, attrs = {}, text) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
}

export function mount(root) {
  const info = document.createElement("div"); info.className = "muted";
  const chart = s("svg", { class: "sqlplan-costs" }); chart.style.cssText = "width:100%;height:280px;display:block";
  const budget = document.createElement("div"); budget.id = "sqlplan-budget";
  root.append(info, chart, budget);
  return {
    update(m) {
      const rows = m.per_query;
      const series = Object.keys(rows[0] || {}).filter((k) => k !== "query" && k !== "equivalent");
      const W = 900, H = 280, L = 50, B = 40, T = 22;
      chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
      const max = Math.max(1, ...rows.flatMap((r) => series.map((k) => r[k])));
      const top = Math.ceil(Math.log10(max));
      const y = (v) => T + (H - T - B) * (1 - Math.log10(Math.max(v, 1)) / top);
      const gw = (W - L - 10) / Math.max(rows.length, 1), bw = (gw * 0.8) / series.length;
      const parts = [];
      for (let e = 0; e <= top; e++) {
        parts.push(s("line", { x1: L, x2: W - 10, y1: y(10 ** e), y2: y(10 ** e), stroke: "#e2e2dc" }));
        parts.push(s("text", { x: L - 4, y: y(10 ** e) + 3, "text-anchor": "end", "font-size": 10, fill: "#6b7075" }, `1e${e}`));
      }
      rows.forEach((r, i) => {
        series.forEach((k, j) => {
          const x = L + i * gw + j * bw, v = r[k];
          const bar = s("rect", { class: "cost-bar", "data-series": k, x, y: y(v), width: Math.max(bw - 1, 1),
                                  height: H - B - y(v), fill: k === "final" ? COLOURS[5] : COLOURS[j % 5] });
          bar.append(s("title", {}, `${r.query} ${k}: ${v.toLocaleString()}`));
          parts.push(bar);
        });
        parts.push(s("text", { x: L + i * gw + gw * 0.4, y: H - B + 12, "text-anchor": "middle", "font-size": 10,
                               fill: r.equivalent ? "#1d1f21" : "#c0392b" }, r.query));
      });
      series.forEach((k, j) => {
        parts.push(s("rect", { x: L + j * 120, y: 4, width: 10, height: 10, fill: k === "final" ? COLOURS[5] : COLOURS[j % 5] }));
        parts.push(s("text", { x: L + j * 120 + 14, y: 13, "font-size": 11 }, `${k} (${(m.totals[k] ?? 0).toLocaleString()})`));
      });
      chart.replaceChildren(...parts);
      const mib = (b) => (b / 2 ** 20).toFixed(2);
      const limit = m.budget_bytes;
      const frac = limit ? m.index_bytes / limit : 0;
      budget.innerHTML = "";
      const line = document.createElement("div");
      line.textContent = `index set: ${m.indexes.length} indexes, ${mib(m.index_bytes)} MiB` +
                         (limit ? ` of a ${mib(limit)} MiB budget (${(100 * frac).toFixed(0)}%)` : " (no budget)");
      const bar = document.createElement("div"); bar.className = `bar ${frac > 1 ? "over" : ""}`;
      const fill = document.createElement("div"); fill.style.width = `${Math.min(100, 100 * frac)}%`; bar.append(fill);
      const list = document.createElement("div"); list.className = "muted"; list.textContent = m.indexes.join("; ");
      budget.append(line, ...(limit ? [bar] : []), list);
      info.textContent = `${rows.length} queries · cost in 1,000s of VM steps · plans equivalent: ${m.all_equivalent ? "all" : "NOT all"}`;
    },
  };
}
