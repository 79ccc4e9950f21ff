// Convergence chart: the gap per round on a log axis, in SVG. Points live in data coordinates
// (x = round, y = log10 gap) inside one group whose transform maps them to pixels, so a new round appends
// one element and a rescale changes one attribute: no full redraw per event.
const NS = "http://www.w3.org/2000/svg";
const M = { left: 52, right: 12, top: 10, bottom: 22 };

function svg(tag, attrs = {}) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

export class ConvergenceChart {
  constructor(root) {
    this.svg = svg("svg", { class: "chart", id: "convergence" });
    this.axis = svg("g", { class: "axis" });
    this.plot = svg("g", { class: "plot" });
    this.regroups = svg("g"); this.limitLine = svg("line", { class: "limit", visibility: "hidden" });
    this.forecast = svg("polyline", { class: "forecast" });
    this.line = svg("polyline", { class: "gapline" });
    this.points = svg("g", { class: "points" });
    this.plot.append(this.regroups, this.limitLine, this.forecast, this.line, this.points);
    this.svg.append(this.axis, this.plot);
    root.append(this.svg);
    this.byRound = new Map(); // round -> point element (a replayed round after a reconnect is not added twice)
    this.zeros = [];          // points of gap <= 0, pinned under the axis minimum
    this.x1 = 1; this.ylo = 0; this.yhi = 1; this.limit = null; this.dirty = true; this.hasRange = false; this.size = [0, 0];
  }

  get count() { return this.byRound.size; }

  // rows: history rows of /v1 (round, gap, regrouped; predicted_gap and hit when the API has them)
  add(row) {
    if (this.byRound.has(row.round)) return;
    const y = row.gap > 0 ? Math.log10(row.gap) : null;
    const cls = ["pt", row.hit === true ? "hit" : row.hit === false ? "miss" : "", y === null ? "zero" : ""];
    const pt = svg("path", { class: cls.join(" ").trim(), "data-round": row.round });
    pt.dataset.y = y === null ? "" : String(y);
    this.byRound.set(row.round, pt);
    this.points.append(pt);
    if (y === null) this.zeros.push(pt); else this.extend(y);
    this.place(pt, row.round, y);
    this.append(this.line, row.round, y === null ? this.ylo : y);
    if (row.predicted_gap !== undefined && row.predicted_gap !== null && row.predicted_gap > 0) {
      const py = Math.log10(row.predicted_gap);
      this.extend(py);
      this.append(this.forecast, row.round, py);
    }
    if (row.regrouped) {
      this.regroups.append(svg("line", { class: "regroup", x1: row.round, x2: row.round, y1: -400, y2: 400 }));
    }
    if (row.round > this.x1) { this.x1 = row.round; this.dirty = true; }
  }

  setLimit(gap) {
    const y = gap !== null && gap !== undefined && gap > 0 ? Math.log10(gap) : null;
    if (y === this.limit) return;
    this.limit = y;
    if (y === null) { this.limitLine.setAttribute("visibility", "hidden"); return; }
    this.extend(y);
    Object.entries({ x1: -1e4, x2: 1e6, y1: y, y2: y, visibility: "visible" })
      .forEach(([k, v]) => this.limitLine.setAttribute(k, v));
  }

  extend(y) {
    if (!this.hasRange) {
      this.hasRange = true; this.dirty = true; this.ylo = Math.floor(y); this.yhi = Math.max(Math.ceil(y), this.ylo + 1);
      return;
    }
    if (y < this.ylo) { this.ylo = Math.floor(y); this.dirty = true; }
    if (y > this.yhi) { this.yhi = Math.ceil(y); this.dirty = true; }
    if (this.yhi - this.ylo < 1) { this.yhi = this.ylo + 1; }
  }

  append(poly, x, y) {
    const p = this.svg.createSVGPoint(); p.x = x; p.y = y; poly.points.appendItem(p);
  }

  place(pt, x, y) { pt.setAttribute("d", `M${x} ${y === null ? this.ylo - 0.35 : y}h0`); }

  // Called once per animation frame at most: only a changed size or range touches the transform and axes.
  render() {
    const w = this.svg.clientWidth || 600, h = this.svg.clientHeight || 300;
    if (!this.dirty && w === this.size[0] && h === this.size[1]) return;
    const rescaledY = this.dirty;
    this.size = [w, h]; this.dirty = false;
    const x1 = Math.max(this.x1, 1), ylo = this.ylo - 0.5, yhi = this.yhi;
    const sx = (w - M.left - M.right) / x1, sy = (h - M.top - M.bottom) / (yhi - ylo);
    this.plot.setAttribute("transform", `matrix(${sx} 0 0 ${-sy} ${M.left} ${M.top + yhi * sy})`);
    if (rescaledY) for (const pt of this.zeros) this.place(pt, Number(pt.dataset.round), null);
    this.drawAxes(w, h, x1, ylo, yhi, sx, sy);
  }

  drawAxes(w, h, x1, ylo, yhi, sx, sy) {
    const parts = [];
    const yOf = (v) => M.top + (yhi - v) * sy;
    const step = Math.max(1, Math.ceil((yhi - Math.ceil(ylo)) / 8));
    for (let e = Math.ceil(ylo); e <= yhi; e += step) {
      parts.push(svg("line", { x1: M.left, x2: w - M.right, y1: yOf(e), y2: yOf(e) }));
      const t = svg("text", { x: M.left - 4, y: yOf(e) + 3, "text-anchor": "end" }); t.textContent = `1e${e}`;
      parts.push(t);
    }
    const xstep = niceStep(x1 / 8);
    for (let r = 0; r <= x1; r += xstep) {
      const t = svg("text", { x: M.left + r * sx, y: h - 6, "text-anchor": "middle" }); t.textContent = String(r);
      parts.push(t);
    }
    const label = svg("text", { x: M.left, y: M.top - 1 }); label.textContent = "gap F − F_ref (log)";
    parts.push(label);
    this.axis.replaceChildren(...parts);
  }
}

function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
