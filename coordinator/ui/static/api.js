// The page's only door to the coordinator: the public /v1 API with a Bearer token kept in sessionStorage
// (never in a URL), and a server-sent-events reader over fetch (EventSource cannot send a header).

const TOKEN_KEY = "blockopt.token";

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  get isAuth() { return this.status === 401 || this.status === 403; }
}

function headers(extra = {}) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

async function errorOf(res) {
  let code = "http_error", message = res.statusText || "request failed";
  try {
    const body = await res.json();
    if (body && body.error) { code = body.error.code || code; message = body.error.message || message; }
  } catch (_) { /* not JSON */ }
  return new ApiError(res.status, code, message);
}

export async function getJSON(path, signal) {
  let res;
  try {
    res = await fetch(path, { headers: headers(), signal, cache: "no-store" });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, "unreachable", "the coordinator does not answer");
  }
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Reads `event:`/`id:`/`data:` blocks; reconnects with Last-Event-ID until a `status` event (terminal)
// arrives or stop() is called. handlers: onEvent(type, data, id), onState("live"|"retry"|"ended"), onError(err).
export class EventStream {
  constructor(path, handlers) {
    this.path = path; this.h = handlers; this.lastId = null; this.abort = new AbortController(); this.done = false;
  }
  stop() { this.done = true; this.abort.abort(); }
  async run() {
    let backoff = 250;
    while (!this.done) {
      try {
        const extra = this.lastId === null ? {} : { "Last-Event-ID": this.lastId };
        const res = await fetch(this.path, { headers: headers({ Accept: "text/event-stream", ...extra }),
                                             signal: this.abort.signal, cache: "no-store" });
        if (!res.ok) {
          const err = await errorOf(res);
          if (err.isAuth || res.status === 404) { this.done = true; this.h.onError(err); return; }
          throw err;
        }
        this.h.onState("live");
        backoff = 250;
        if (await this.read(res.body)) { this.done = true; this.h.onState("ended"); return; }
      } catch (e) {
        if (this.done || e.name === "AbortError") return;
      }
      this.h.onState("retry");
      await sleep(backoff);
      backoff = Math.min(backoff * 2, 4000);
    }
  }
  // true when the stream delivered its terminal status event
  async read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      buffer += value.replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let type = "message", id = null;
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") type = val; else if (field === "id") id = val; else if (field === "data") data.push(val);
        }
        if (!data.length) continue;
        if (id !== null) this.lastId = id;
        this.h.onEvent(type, JSON.parse(data.join("\n")), id);
        if (type === "status") return true;
      }
    }
  }
}

// Coalesces many updates into one render per animation frame.
export function frameScheduler(render) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; render(); });
  };
}

export function fmt(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (typeof x !== "number") return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(digits - 1);
  return GROUPED.format(Number(x.toPrecision(digits + 2)));
}
const GROUPED = new Intl.NumberFormat("en-US", { maximumFractionDigits: 6 });  // one formatter: building one per call costs ~0.1 ms

export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, seconds);
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// Sets a cell's text only when it changed: a live table touches the DOM only where numbers move.
export function setText(node, text) { if (node.textContent !== text) node.textContent = text; }
