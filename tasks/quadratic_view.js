// The quadratic panel of blockopt's web UI: per-block residual ‖(Ax − b)_i‖ as a heat strip (log colour scale).
const NS = "http://www.w3.org/2000/svg";

export function mount(root) {
  const info = document.createElement("div"); info.className = "muted";
  const strip = document.createElementNS(NS, "svg");
  strip.setAttribute("class", "residual-strip"); strip.setAttribute("preserveAspectRatio", "none");
  strip.style.cssText = "width:100%;height:48px;display:block;border:1px solid #ccc";
  root.append(info, strip);
  const cells = [];
  return {
    update(model) {
      const r = model.residuals, n = r.length;
      strip.setAttribute("viewBox", `0 0 ${n} 1`);
      const logs = r.map((v) => Math.log10(Math.max(v, 1e-16)));
      const hi = Math.max(...logs), lo = Math.min(...logs, hi - 1);
      for (let i = 0; i < n; i++) {
        if (!cells[i]) {
          cells[i] = document.createElementNS(NS, "rect");
          Object.entries({ x: i, y: 0, width: 1, height: 1, class: "residual" }).forEach(([k, v]) => cells[i].setAttribute(k, v));
          cells[i].append(document.createElementNS(NS, "title"));
          strip.append(cells[i]);
        }
        const f = (logs[i] - lo) / (hi - lo);
        cells[i].setAttribute("fill", `hsl(${Math.round(220 - 220 * f)} 75% ${Math.round(88 - 40 * f)}%)`);
        cells[i].firstChild.textContent = `block ${i}: residual ${r[i].toExponential(2)}`;
      }
      while (cells.length > n) cells.pop().remove();
      info.textContent = `${n} blocks · residual ‖(Ax − b)_i‖ from ${Math.min(...r).toExponential(1)} (blue) ` +
                         `to ${Math.max(...r).toExponential(1)} (red)`;
    },
  };
}
