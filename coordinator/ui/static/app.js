// Entry: the token form, the message banner and a hash router (#/ = task list, #/tasks/<id> = task page).
import { setToken, token } from "./api.js";
import { TaskList } from "./list.js";
import { TaskPage } from "./task.js";

const main = document.getElementById("main");
const banner = document.getElementById("message");
const conn = document.getElementById("conn");
const form = document.getElementById("token-form");
const input = document.getElementById("token-input");
let page = null;
let anonymous = false;  // the field was submitted empty: try without a token (a --public-read coordinator)

export const ui = {
  error(err) {
    if (err && err.isAuth) {
      const had = token() ? "The coordinator refused this token" : "This view needs a token and none was entered";
      showMessage(`${had} (HTTP ${err.status} ${err.code}: ${err.message}). ` +
                  "Enter a token the coordinator accepts in the token field above.", "error");
      input.focus();
    } else if (err && err.status === 404) {
      showMessage(`Not found: ${err.message}`, "error");
    } else if (err) {
      showMessage(`The coordinator answered with an error: ${err.message || err}`, "error");
    }
  },
  clear() { banner.hidden = true; banner.textContent = ""; },
  connection(state, text) { conn.className = `conn ${state}`; conn.textContent = text; },
};

function showMessage(text, kind) {
  banner.textContent = text;
  banner.className = `message ${kind === "info" ? "info" : ""}`;
  banner.hidden = false;
}

function route() {
  if (page) page.stop();
  ui.clear();
  ui.connection("", "");
  main.replaceChildren();
  if (!token() && !anonymous) {  // reads are private by default: ask before any request is refused
    showMessage("This view needs a token and none was entered. Enter a token the coordinator accepts (the " +
                "admin token, the task's read token or an agent token) in the token field above; for a " +
                "coordinator started with --public-read, submit the field empty.", "error");
    input.focus();
    page = null;
    return;
  }
  const m = location.hash.match(/^#\/tasks\/([\w-]+)/);
  page = m ? new TaskPage(main, m[1], ui) : new TaskList(main, ui);
  window.blockoptPage = page;  // for the frame-time benchmark (benchmarks/ui_frames.py), which feeds it rows
  page.start();
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  anonymous = !input.value.trim();
  setToken(input.value.trim());
  input.value = "";
  input.placeholder = token() ? "token set for this tab" : "Bearer token (kept for this tab only)";
  route();
});
document.getElementById("token-clear").addEventListener("click", () => { setToken(""); route(); });
input.placeholder = token() ? "token set for this tab" : input.placeholder;
window.addEventListener("hashchange", route);
route();
