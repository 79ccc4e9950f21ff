// Convergence chart: the gap per round (or against seconds since the task was created: setAxis) on a log axis, on a canvas. Drawing is incremental: a new round draws
// its own point and segments over what is there; the whole chart is redrawn only when the axes change (the
// x range grows with headroom, the y range by decades) or the canvas is resized.
const M = { left: 52, right: 12, top: 14, bottom: 22 };
const COLOURS = { gap: "#2c6fbb", hit: "#2e8b57", miss: "#c0392b", zero: "#6b7075", forecast: "#d68910",
                  regroup: "#8e44ad", limit: "#c0392b", grid: "#e2e2dc", text: "#6b7075" };

export class ConvergenceChart {
  constructor(root) {
    this.canvas = document.createElement("canvas");
    this.canvas.id = "convergence";
    this.canvas.style.cssText = "width:100%;height:420px;display:block";
    root.append(this.canvas);
    this.ctx = this.canvas.getContext("2d");
    this.rows = [];            // every row, in arrival order (for full redraws)
    this.byRound = new Map();  // round -> row: a round replayed after a reconnect is not drawn twice
    this.queue = [];           // rows not drawn yet
    this.drawn = 0;            // points on the canvas (what the tests read)
    this.x1 = 10; this.ylo = 0; this.yhi = 1; this.hasRange = false; this.limit = null;
    this.full = true; this.size = [0, 0]; this.box = [0, 0];
    this.axis = "rounds";      // x: "rounds", or "seconds" (each row's t: seconds since the task was created)
    // the size comes from a ResizeObserver: reading clientWidth in a frame would force a layout of the page
    new ResizeObserver(([entry]) => {
      this.box = [entry.contentRect.width, entry.contentRect.height];
      requestAnimationFrame(() => this.render());
    }).observe(this.canvas);
  }

  get count() { return this.byRound.size; }
  drawnRounds() { return this.rows.slice(0, this.rows.length - this.queue.length).map((r) => r.round); }

  // rows: history rows of /v1 (round, gap, regrouped; predicted_gap and hit when the API has them)
  add(row) {
    if (this.byRound.has(row.round)) return;
    this.byRound.set(row.round, row);
    this.rows.push(row);
    this.queue.push(row);
    if (row.gap > 0) this.extend(Math.log10(row.gap));
    if (row.predicted_gap > 0) this.extend(Math.log10(row.predicted_gap));
    this.grow(this.xOf(row));
  }

  xOf(row) { return this.axis === "seconds" ? (row.t ?? 0) : row.round; }

  grow(x) { if (x > this.x1) { this.x1 = Math.ceil(x * 1.25); this.full = true; } }

  // Rounds or seconds on the x-axis: the whole chart is redrawn on the new axis.
  setAxis(axis) {
    if (axis === this.axis) return;
    this.axis = axis; this.x1 = 10; this.full = true;
    for (const row of this.rows) this.grow(this.xOf(row));
    requestAnimationFrame(() => this.render());
  }

  setLimit(gap) {
    const y = gap !== null && gap !== undefined && gap > 0 ? Math.log10(gap) : null;
    if (y === this.limit) return;
    this.limit = y;
    if (y !== null) this.extend(y);
    this.full = true;
  }

  extend(y) {
    if (!this.hasRange) {
      this.hasRange = true; this.full = true; this.ylo = Math.floor(y); this.yhi = Math.max(Math.ceil(y), this.ylo + 1);
      return;
    }
    if (y < this.ylo) { this.ylo = Math.floor(y); this.full = true; }
    if (y > this.yhi) { this.yhi = Math.ceil(y); this.full = true; }
  }

  // At most once per animation frame (the page's scheduler): new points only, unless the axes changed.
  render() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(this.box[0] || 600), h = Math.round(this.box[1] || 300);
    if (w !== this.size[0] || h !== this.size[1]) {
      this.size = [w, h]; this.canvas.width = w * dpr; this.canvas.height = h * dpr; this.full = true;
    }
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const sx = (w - M.left - M.right) / this.x1, sy = (h - M.top - M.bottom) / (this.yhi - (this.ylo - 0.5));
    this.px = (r) => M.left + r * sx;
    this.py = (y) => M.top + (this.yhi - y) * sy;
    let from = this.rows.length - this.queue.length;
    if (this.full) {
      this.full = false;
      ctx.clearRect(0, 0, w, h);
      this.axes(w, h);
      from = 0;
    }
    for (let i = from; i < this.rows.length; i++) this.draw(this.rows[i], i > 0 ? this.rows[i - 1] : null);
    this.queue = [];
    this.drawn = this.rows.length;
    this.canvas.dataset.points = String(this.drawn);
  }

  yOf(gap) { return gap > 0 ? Math.log10(gap) : this.ylo - 0.35; }

  draw(row, prev) {
    const ctx = this.ctx, x = this.px(this.xOf(row)), y = this.py(this.yOf(row.gap));
    if (row.regrouped) {
      ctx.strokeStyle = COLOURS.regroup; ctx.setLineDash([2, 3]); ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(x, M.top); ctx.lineTo(x, this.size[1] - M.bottom); ctx.stroke(); ctx.setLineDash([]);
    }
    if (prev) {
      ctx.strokeStyle = COLOURS.gap; ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.moveTo(this.px(this.xOf(prev)), this.py(this.yOf(prev.gap))); ctx.lineTo(x, y); ctx.stroke();
      if (prev.predicted_gap > 0 && row.predicted_gap > 0) {
        ctx.strokeStyle = COLOURS.forecast; ctx.setLineDash([4, 3]); ctx.lineWidth = 1.2;
        ctx.beginPath(); ctx.moveTo(this.px(this.xOf(prev)), this.py(Math.log10(prev.predicted_gap)));
        ctx.lineTo(x, this.py(Math.log10(row.predicted_gap))); ctx.stroke(); ctx.setLineDash([]);
      }
    }
    if (row.predicted_gap > 0) {  // the forecast band of this step: from the gap up to the predicted bound
      const top = this.py(Math.log10(row.predicted_gap));
      ctx.fillStyle = "rgba(214, 137, 16, 0.15)";
      ctx.fillRect(x - 2, Math.min(top, y), 4, Math.abs(y - top));
    }
    const colour = row.gap <= 0 ? COLOURS.zero : row.hit === true ? COLOURS.hit : row.hit === false ? COLOURS.miss : COLOURS.gap;
    ctx.fillStyle = colour;
    ctx.beginPath(); ctx.arc(x, y, row.hit === false ? 3.5 : 2.5, 0, 2 * Math.PI); ctx.fill();
  }

  axes(w, h) {
    const ctx = this.ctx;
    ctx.font = "10px system-ui, sans-serif"; ctx.fillStyle = COLOURS.text; ctx.strokeStyle = COLOURS.grid; ctx.lineWidth = 1;
    const step = Math.max(1, Math.ceil((this.yhi - this.ylo) / 8));
    ctx.textAlign = "right";
    for (let e = this.ylo; e <= this.yhi; e += step) {
      const y = this.py(e);
      ctx.beginPath(); ctx.moveTo(M.left, y); ctx.lineTo(w - M.right, y); ctx.stroke();
      ctx.fillText(`1e${e}`, M.left - 4, y + 3);
    }
    ctx.textAlign = "center";
    const xstep = niceStep(this.x1 / 8);
    for (let r = 0; r <= this.x1; r += xstep) ctx.fillText(String(r), this.px(r), h - 6);
    ctx.textAlign = "right";
    ctx.fillText(this.axis === "seconds" ? "s" : "round", w - M.right, h - 6);
    ctx.textAlign = "left";
    ctx.fillText("gap F − F_ref (log)", M.left, M.top - 4);
    if (this.limit !== null) {
      const y = this.py(this.limit);
      ctx.strokeStyle = COLOURS.limit; ctx.setLineDash([6, 4]);
      ctx.beginPath(); ctx.moveTo(M.left, y); ctx.lineTo(w - M.right, y); ctx.stroke(); ctx.setLineDash([]);
      ctx.fillStyle = COLOURS.limit; ctx.textAlign = "right"; ctx.fillText("forecast limit", w - M.right, y - 3);
    }
  }
}

function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
