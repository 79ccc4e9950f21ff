"""The web UI in real headless Chromium against real coordinators and fleets (issue 15)."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from coordinator.api.embedded import EmbeddedServer
from coordinator.status import TERMINAL as STATUS_TERMINAL
from tests.browser_support import ARTIFACTS, Browser, browser  # noqa: F401  (fixture)
from tests.conftest import ADMIN, start_coordinator
from tests.redis_support import Fleet, Replica, create_task, new_prefix, purge, require_redis

TERMINAL = set(STATUS_TERMINAL)
ROUTING_20 = {
    "kind": "routing",
    "params": {"map": "random-32-32-10", "scen": "random-32-32-10-random-1", "robots": 20, "exact_limit": 0},
    "budgets": {"seconds": 120},
}
QUADRATIC_SLOW = {"kind": "quadratic", "params": {"blocks": 8, "dim": 3, "coupling": 0.9}}
"""Strong coupling: dozens of rounds, so a coordinator restart lands mid-run."""
ROWS_PER_PAGE = 20
"""Rows of the rounds table's pages (task.js ROUND_ROWS_SHOWN)."""


def rounds_of(url: str, task_id: str) -> list[int]:
    r = httpx.get(
        f"{url}/v1/tasks/{task_id}/rounds", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
    )
    return [row["round"] for row in r.json()["rounds"]]


def agents_of(url: str, task_id: str) -> list[str]:
    r = httpx.get(
        f"{url}/v1/tasks/{task_id}/agents", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
    )
    assert r.status_code == 200, r.text
    return [a["id"] for a in r.json()["agents"]]


def open_task_page(b: Browser, url: str, task_id: str) -> None:
    """As a person would: the token entered once on the task list, then the task's page."""
    b.open(f"{url}/ui/")
    b.set_token(ADMIN)
    b.wait(lambda: b.count(f"tr[data-task='{task_id}']") == 1, 30, "the task in the list")
    b.js("document.querySelector(`tr[data-task='${arguments[0]}']`).click();", task_id)


def chart_rounds(b: Browser) -> list[int]:
    """The rounds the convergence chart has drawn (canvas: the chart keeps the list), sorted."""
    return sorted(
        int(r)
        for r in b.js("const p = window.blockoptPage; return p && p.chart ? p.chart.drawnRounds() : [];")
    )


def status_shown(b: Browser) -> str:
    return b.text("#task-status")


@pytest.fixture
def memory_replica(tmp_path: Path) -> Iterator[Replica]:
    r = Replica("ui", "memory", "unused:", tmp_path / "coordinator.log").start()
    try:
        yield r
    finally:
        r.stop()


@pytest.mark.slow
def test_task_page_follows_a_routing_run_live(
    browser: Browser, memory_replica: Replica, tmp_path: Path
) -> None:
    b, url = browser, memory_replica.url
    task = create_task(memory_replica, **ROUTING_20)
    open_task_page(b, url, task["id"])
    b.wait(lambda: status_shown(b) == "running", 60, "the page to show the running task")
    b.js("window.__sameDocument = 'yes';")  # gone if the page ever reloads
    fleet = Fleet.start(memory_replica, task, 3, tmp_path / "fleet.log", seed=1)
    try:
        b.wait(lambda: status_shown(b) in TERMINAL, 240, "a terminal status on the page")
    finally:
        fleet.stop()
    assert b.js("return window.__sameDocument;") == "yes"
    rounds = rounds_of(url, task["id"])
    assert rounds, "the run recorded no round"
    b.wait(lambda: chart_rounds(b) == sorted(rounds), 20, "one chart point per round")
    # the table takes new rows at most every TABLE_MS, so it may trail the chart by one flush
    table_rounds = (
        "return [...document.querySelectorAll('#rounds tbody tr')].map(r => Number(r.dataset.round));"
    )
    b.wait(
        lambda: b.js(table_rounds) == sorted(rounds, reverse=True)[:ROWS_PER_PAGE],
        10,
        "the newest rounds in the table, newest first",
    )
    b.wait(lambda: b.count("svg.routing-map polyline.robot-path") == 20, 20, "one path per robot on the map")
    agents = agents_of(url, task["id"])
    assert len(agents) == 3
    b.wait(
        lambda: (
            sorted(
                b.js("return [...document.querySelectorAll('#agents tbody tr')].map(r => r.dataset.agent);")
            )
            == sorted(agents)
        ),
        20,
        "every agent in the agents table",
    )
    assert b.text("#task-status") in TERMINAL
    # the convergence chart's x-axis switches to seconds: each point at its round's time
    b.js(
        "const s = document.getElementById('chart-x');"
        "s.value = 'seconds'; s.dispatchEvent(new Event('change'));"
    )
    times = b.js(
        "const c = window.blockoptPage.chart;"
        "return [...c.rows].sort((a, b) => a.round - b.round).map(r => c.xOf(r));"
    )
    rows = httpx.get(
        f"{url}/v1/tasks/{task['id']}/rounds", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
    ).json()["rounds"]
    assert times == [r["t"] for r in rows] and times[-1] > 0
    # the map's time slider and play button drive the robots
    assert float(b.js("return Number(document.getElementById('routing-time').max);")) > 0
    b.js("document.getElementById('routing-play').click();")
    frames = b.driver.execute_async_script(FRAME_PROBE, 2000)
    print(f"frame intervals while the robots move: {frames}")
    assert frames["frames"] > 10
    shot = b.screenshot(ARTIFACTS / "task-page.png")
    if os.environ.get("BLOCKOPT_UPDATE_SCREENSHOT") == "1":
        shutil.copy(shot, Path(__file__).resolve().parents[3] / "docs" / "task-page.png")
    assert b.errors() == [], b.errors()


FRAME_PROBE = """
const [ms, done] = arguments;
const t = []; const start = performance.now();
function step(now) { t.push(now); if (now - start < ms) requestAnimationFrame(step); else finish(); }
function finish() {
  const d = t.slice(1).map((x, i) => x - t[i]).sort((a, b) => a - b);
  const q = (f) => d[Math.min(d.length - 1, Math.floor(f * d.length))];
  done({frames: d.length, p50: q(0.5), p95: q(0.95), max: d[d.length - 1]});
}
requestAnimationFrame(step);
"""


@pytest.mark.slow
def test_page_reconnects_after_a_coordinator_restart(browser: Browser, tmp_path: Path) -> None:
    """Redis store: kill the coordinator mid-run, start it again; the open page resumes with Last-Event-ID."""
    store = require_redis()
    prefix = new_prefix()
    replica = Replica("a", store, prefix, tmp_path / "a.log").start()
    fleets: list[Fleet] = []
    try:
        b, url = browser, replica.url
        task = create_task(replica, **QUADRATIC_SLOW)
        open_task_page(b, url, task["id"])
        fleets.append(Fleet.start(replica, task, 3, tmp_path / "f1.log", seed=1))
        b.wait(lambda: len(chart_rounds(b)) >= 3, 120, "three rounds on the chart before the restart")
        replica.signal(signal.SIGKILL)
        replica.proc.wait(10)  # type: ignore[union-attr]
        fleets[0].stop()
        before = len(chart_rounds(b))
        b.wait(lambda: "reconnecting" in b.text("#conn"), 30, "the page to notice the coordinator is gone")
        replica.start()
        fleets.append(Fleet.start(replica, task, 3, tmp_path / "f2.log", seed=2))
        b.wait(lambda: status_shown(b) in TERMINAL, 240, "a terminal status after the restart")
        rounds = rounds_of(url, task["id"])
        assert len(rounds) > before, "the run did not continue after the restart"
        # no round lost or drawn twice across the reconnect
        b.wait(lambda: chart_rounds(b) == sorted(rounds), 20, "every round once on the chart")
        assert b.count("#rounds tbody tr") == min(len(rounds), ROWS_PER_PAGE)
        assert len(rounds) > ROWS_PER_PAGE, "the slow task should outlast one page of the rounds table"
        b.js("document.getElementById('rounds-older').click();")
        assert (
            b.js(
                "return [...document.querySelectorAll('#rounds tbody tr')].map(r => Number(r.dataset.round));"
            )
            == sorted(rounds, reverse=True)[ROWS_PER_PAGE : 2 * ROWS_PER_PAGE]
        )
        # the reconnect asked for what came after its last event (Last-Event-ID): no round arrived twice
        assert b.js("return window.blockoptStats.roundEvents;") == len(rounds)
    finally:
        for f in fleets:
            f.stop()
        replica.stop()
        assert purge(store, prefix) == [], f"keys left under {prefix}"


def test_missing_or_bad_token_shows_a_clear_message(browser: Browser) -> None:
    server, coord = start_coordinator()
    try:
        task = coord.create_task()
        b = browser
        b.open(f"{coord.url}/ui/#/tasks/{task['id']}")
        b.wait(lambda: b.visible("#message"), 30, "a message without a token")
        msg = b.text("#message")
        assert "needs a token and none was entered" in msg and "read token" in msg, msg
        assert b.errors() == [], b.errors()  # nothing was requested without a token, so nothing was refused
        b.set_token("not-the-token")
        b.wait(lambda: "refused this token" in b.text("#message"), 30, "a message for a wrong token")
        assert "401" in b.text("#message")
        b.set_token(ADMIN)
        b.wait(
            lambda: not b.visible("#message") and b.count("#kind-view .residual") == 4,
            30,
            "the message gone and the kind's view drawn with a good token",
        )
        assert b.js("return Object.keys(sessionStorage).map(k => sessionStorage.getItem(k));") == [ADMIN]
        assert ADMIN not in b.driver.current_url
    finally:
        coord.admin.close()
        server.stop()


def test_docs_list_the_operations_with_no_route_out(browser: Browser) -> None:
    server, coord = start_coordinator()
    try:
        b = browser
        b.open(f"{coord.url}/docs")
        b.wait(lambda: b.count(".opblock") >= 10, 60, "Swagger UI's operations")
        assert "/v1/tasks/{task_id}/events" in b.text("#swagger-ui")
        b.open(f"{coord.url}/redoc")
        b.wait(
            lambda: (
                "/v1/tasks/{task_id}/agents" in b.text("body")
                or b.count("[data-section-id^='operation/']") >= 10
            ),
            60,
            "ReDoc's operations",
        )
    finally:
        coord.admin.close()
        server.stop()


def test_default_cdn_docs_stay_blank_with_no_route_out(browser: Browser) -> None:
    """The failing input of the test above: FastAPI's own /docs (assets from a CDN) lists nothing here."""
    app = FastAPI()

    @app.get("/v1/ping")
    async def ping() -> dict[str, str]:
        return {"ok": "yes"}

    with EmbeddedServer(app) as server:
        b = browser
        b.open(f"{server.url}/docs")
        b.wait(lambda: b.js("return document.readyState") == "complete", 30, "the page to load")
        b.wait(
            lambda: any("swagger" in e.lower() or "ERR_NAME_NOT_RESOLVED" in e for e in b.errors()),
            30,
            "the CDN assets to fail",
        )
        assert b.count(".opblock") == 0


@pytest.mark.slow
def test_sqlplan_panel_draws_cost_bars_and_the_index_budget(browser: Browser) -> None:
    server, coord = start_coordinator()
    try:
        task = coord.create_task(
            kind="sqlplan", params={"blocks": 2, "scale": 0.01, "baselines": False, "index_budget_mb": 7}
        )
        # the first use of a scale generates TPC-H, so the task may still be preparing
        coord.wait_for(task["id"], lambda v: v["status"] != "preparing", timeout=120)
        model = coord.admin.get(f"/v1/tasks/{task['id']}/view").json()["model"]
        series = [k for k in model["per_query"][0] if k not in ("query", "equivalent")]
        b = browser
        open_task_page(b, coord.url, task["id"])
        b.wait(
            lambda: b.count("svg.sqlplan-costs rect.cost-bar") == len(model["per_query"]) * len(series),
            60,
            "one bar per query and series",
        )
        assert "of a 7.00 MiB budget" in b.text("#sqlplan-budget")
        assert b.errors() == [], b.errors()
    finally:
        coord.admin.close()
        server.stop()
