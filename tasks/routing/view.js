// The routing panel of blockopt's web UI: the map, one SVG path per robot, conflicts marked, and the robots
// moving along the current plan (play/pause, time slider). Loaded by the UI core from /v1/kinds/routing/view.js.
const NS = "http://www.w3.org/2000/svg";
const STEPS_PER_SECOND = 6;

function svgEl(tag, attrs = {}) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  return n;
}

function colour(i, n) { return `hsl(${Math.round((360 * i * 0.618034) % 360)} 70% 42%)`; }

export function mount(root) {
  const wrap = document.createElement("div");
  wrap.style.cssText = "position:relative;max-width:760px";
  const canvas = document.createElement("canvas");
  canvas.style.cssText = "width:100%;display:block;image-rendering:pixelated;will-change:transform";
  const overlay = svgEl("svg", { class: "routing-map", preserveAspectRatio: "none" });
  overlay.style.cssText = "position:absolute;inset:0;width:100%;height:100%;will-change:transform";
  const paths = svgEl("g", { fill: "none", "stroke-width": "0.18", "stroke-linejoin": "round", opacity: "0.75" });
  const conflicts = svgEl("g", { class: "conflicts" });
  overlay.append(paths, conflicts);
  wrap.append(canvas, overlay);
  const controls = document.createElement("div");
  controls.style.cssText = "display:flex;gap:.6rem;align-items:center;margin:.4rem 0";
  const play = document.createElement("button"); play.textContent = "play"; play.id = "routing-play";
  const slider = document.createElement("input"); slider.type = "range"; slider.min = "0"; slider.step = "any";
  slider.id = "routing-time"; slider.style.flex = "1";
  const label = document.createElement("span"); label.id = "routing-t";
  const info = document.createElement("div"); info.className = "muted"; info.id = "routing-info";
  controls.append(play, slider, label);
  root.append(info, controls, wrap);

  let model = null, t = 0, playing = false, last = 0, mapKey = "", frame = 0;
  const pathNodes = [], pathKeys = [];
  let colours = [];
  const ctx = canvas.getContext("2d");
  let mapImage = null;
  const SCALE = 8;

  function drawMap() {
    const { width, height, rows } = model;
    mapImage = document.createElement("canvas");
    mapImage.width = width * SCALE; mapImage.height = height * SCALE;
    const m = mapImage.getContext("2d");
    m.fillStyle = "#f4f4f0"; m.fillRect(0, 0, mapImage.width, mapImage.height);
    m.fillStyle = "#2b2b2b";
    rows.forEach((row, y) => { for (let x = 0; x < width; x++) if (row[x] !== ".") m.fillRect(x * SCALE, y * SCALE, SCALE, SCALE); });
    canvas.width = mapImage.width; canvas.height = mapImage.height;
    overlay.setAttribute("viewBox", `0 0 ${width} ${height}`);
  }

  function at(path, time) {  // (x, y) of a robot at fractional time, parked at its goal after its path ends
    const w = model.width;
    const i = Math.min(Math.floor(time), path.length - 1), j = Math.min(i + 1, path.length - 1), f = time - i;
    const a = path[i], b = path[j];
    const ax = a % w, ay = Math.floor(a / w), bx = b % w, by = Math.floor(b / w);
    const g = j === i ? 0 : Math.min(Math.max(f, 0), 1);
    return [ax + (bx - ax) * g + 0.5, ay + (by - ay) * g + 0.5];
  }

  function drawRobots() {
    if (!model) return;
    ctx.drawImage(mapImage, 0, 0);
    const n = model.paths.length, half = SCALE * 0.4;
    for (let r = 0; r < n; r++) {
      const [x, y] = at(model.paths[r], t);
      ctx.fillStyle = colours[r];
      ctx.fillRect(x * SCALE - half, y * SCALE - half, 2 * half, 2 * half);
    }
    label.textContent = `t = ${t.toFixed(1)} / ${slider.max}`;
  }

  function tick(now) {
    frame = 0;
    if (!playing) return;
    if (last) t += ((now - last) / 1000) * STEPS_PER_SECOND;
    last = now;
    const end = Number(slider.max);
    if (t >= end) { t = end; playing = false; play.textContent = "play"; }
    slider.value = String(t);
    drawRobots();
    if (playing) frame = requestAnimationFrame(tick);
  }

  play.addEventListener("click", () => {
    playing = !playing; play.textContent = playing ? "pause" : "play"; last = 0;
    if (playing && t >= Number(slider.max)) t = 0;
    if (playing && !frame) frame = requestAnimationFrame(tick);
  });
  slider.addEventListener("input", () => { t = Number(slider.value); if (!frame) frame = requestAnimationFrame(() => { frame = 0; drawRobots(); }); });

  return {
    // Only robots whose path changed get their SVG path rewritten.
    update(next) {
      model = next;
      const key = `${next.width}x${next.height}:${next.rows.join("")}`;
      if (key !== mapKey) { mapKey = key; drawMap(); }
      const w = next.width, n = next.paths.length;
      if (colours.length !== n) colours = Array.from({ length: n }, (_, i) => colour(i, n));
      for (let r = 0; r < n; r++) {
        const cells = next.paths[r];
        const k = cells.join(",");
        if (pathKeys[r] === k) continue;
        pathKeys[r] = k;
        if (!pathNodes[r]) {
          pathNodes[r] = svgEl("polyline", { class: "robot-path", "data-robot": r, stroke: colour(r, n) });
          paths.append(pathNodes[r]);
        }
        pathNodes[r].setAttribute("points", cells.map((c) => `${(c % w) + 0.5},${Math.floor(c / w) + 0.5}`).join(" "));
      }
      while (pathNodes.length > n) { pathNodes.pop().remove(); pathKeys.pop(); }
      conflicts.replaceChildren(...next.conflicts.map(([time, x, y]) => {
        const m = svgEl("circle", { class: "conflict", cx: x + 0.5, cy: y + 0.5, r: 0.55, fill: "none",
                                    stroke: "#e00", "stroke-width": 0.2 });
        const title = svgEl("title"); title.textContent = `conflict at t=${time}`; m.append(title);
        return m;
      }));
      const makespan = Math.max(0, ...next.paths.map((p) => p.length - 1));
      slider.max = String(makespan);
      if (t > makespan) t = makespan;
      info.textContent = `${n} robots · sum of costs ${next.sum_of_costs} (lower bound ${next.lower_bound}) · ` +
                         `${next.conflicts.length} conflicts · makespan ${makespan}`;
      drawRobots();
    },
    destroy() { playing = false; if (frame) cancelAnimationFrame(frame); },
  };
}
