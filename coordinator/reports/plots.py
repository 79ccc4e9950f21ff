"""Pictures of a run: the gap per round on a log axis, its one-step forecasts and the forecast ahead.

A bound that carries no information (a floor above the gap, an envelope far above it) is not drawn: the
legend says so instead.
"""

from __future__ import annotations

from typing import Literal

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from coordinator.reports.ledger import Report  # noqa: E402

_FLOOR = 1e-300
VACUOUS = 100.0
"""An envelope more than this many times above the gap (median) says nothing worth drawing."""


PlotAxis = Literal["rounds", "seconds"]


def convergence_plot(report: Report, path: str, x: PlotAxis = "rounds") -> str:
    """x = rounds completed (every round is a step), or seconds since the task was created (the anytime
    curve, at the resolution of commits: ``anytime_plot``)."""
    if x == "seconds":
        return anytime_plot(report, path)
    hist = report.history
    ref = report.objective["reference"]
    gap0 = report.objective["initial"] - ref
    xs = [0] + [h["round"] + 1 for h in hist]
    gaps = [max(gap0, _FLOOR)] + [max(h["gap"], _FLOOR) for h in hist]

    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    ax.semilogy(xs, gaps, "o-", ms=3, lw=1.5, color="#1f77b4", label="gap  $F_t - F_{ref}$")
    one = report.checks["one_step"]
    fx = [h["round"] + 1 for h in hist if h.get("predicted_gap") is not None]
    fy = [max(h["predicted_gap"], _FLOOR) for h in hist if h.get("predicted_gap") is not None]
    if fx:
        lower = [max(h["gap"], _FLOOR) for h in hist if h.get("predicted_gap") is not None]
        ax.fill_between(fx, lower, fy, step=None, color="#2ca02c", alpha=0.15, lw=0)
        ax.plot(
            fx,
            fy,
            "_",
            ms=8,
            color="#2ca02c",
            label=f"one-step forecast ({one['coverage_target']:.0%}): hit {one['hits']}/{one['rounds']}",
        )
        misses = [(h["round"] + 1, max(h["gap"], _FLOOR)) for h in hist if h.get("hit") is False]
        if misses:
            ax.plot(
                *zip(*misses, strict=True),
                "x",
                color="#d62728",
                ms=7,
                label=f"missed forecast ({len(misses)})",
            )
    failed = [(h["round"] + 1, max(h["gap"], _FLOOR)) for h in hist if h.get("a_priori_held") is False]
    prior = report.checks.get("a_priori")
    if prior:
        label = f"a priori bound held {prior['rounds_held']}/{prior['rounds_checked']} checked rounds"
        ax.plot([], [], " ", label=label)
        if failed:
            ax.plot(*zip(*failed, strict=True), "v", color="#ff7f0e", ms=6, label="a priori bound failed")
    env = report.checks["envelope"]
    if env["envelope"] and env["informative"] and (env["tightness_median"] or 0) <= VACUOUS:
        w = env["window"]
        ex = list(range(w, w + len(env["envelope"])))
        ax.semilogy(
            ex,
            [max(v, _FLOOR) for v in env["envelope"]],
            ":",
            color="#9467bd",
            lw=1.5,
            label=f"envelope from first {w} steps: hit {env['hits']}/{env['rounds']}",
        )
    elif env["envelope"]:
        why = (
            "no contraction or a floor above the gap"
            if not env["informative"]
            else f"median B/g {env['tightness_median']:.3g}"
        )
        ax.plot([], [], " ", label=f"envelope from first {env['window']} steps: vacuous ({why}), not drawn")
    f = report.forecast
    if f.limit is not None and f.rate is not None and f.remaining and f.remaining > 0:
        last_gap = hist[-1]["gap"] if hist else gap0
        ahead = 10 if f.eta_rounds is None else max(1, min(f.eta_rounds, 200))
        px = [xs[-1] + k for k in range(ahead + 1)]
        py = [max(f.limit - ref + f.remaining * f.rate**k, _FLOOR) for k in range(ahead + 1)]
        py[0] = max(last_gap, _FLOOR)
        ax.semilogy(
            px,
            py,
            "--",
            color="#7f7f7f",
            lw=1.2,
            label=f"forecast: limit {f.limit:.6g}, ETA {f.eta_rounds} rounds",
        )
    regrouped = [h["round"] + 1 for h in hist if h.get("regrouped")]
    for k, at in enumerate(regrouped):  # empty rounds after which the blocks were re-partitioned
        ax.axvline(
            at,
            color="#8c564b",
            lw=0.8,
            ls=":",
            alpha=0.7,
            label=f"blocks regrouped ({len(regrouped)}x)" if k == 0 else None,
        )
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    positive = [g for g in gaps if g > _FLOOR]
    if positive:
        ax.set_ylim(bottom=max(min(positive) / 10, 1e-18), top=max(positive) * 10)
    ax.set_xlabel("round")
    ax.set_ylabel(f"gap to {report.objective['reference_kind'].replace('_', ' ')}")
    task = report.task
    ax.set_title(f"{task['name']} — {report.status}, {report.merge_policy} merging, {report.agents} agents")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def anytime_plot(report: Report, path: str) -> str:
    """The gap against seconds since creation: a step at every commit, round closes marked, the time to each
    relative-gap target drawn, the primal integral in the legend. A report without times says so."""
    anytime = report.anytime or {}
    ref = report.objective["reference"]
    points = [(float(t), float(f)) for t, f in anytime.get("points", [])]
    horizon = float(anytime.get("horizon") or report.wall_s)
    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    if points and anytime.get("timed"):
        xs = [t for t, _ in points] + [max(horizon, points[-1][0])]
        ys = [max(f - ref, _FLOOR) for _, f in points]
        ax.step(xs, ys + ys[-1:], where="post", lw=1.5, color="#1f77b4", label="gap  $F(t) - F_{ref}$")
        closes = [(h["t"], max(h["gap"], _FLOOR)) for h in report.history if h.get("t") is not None]
        if closes:
            ax.plot(*zip(*closes, strict=True), "o", ms=2.5, color="#1f77b4", alpha=0.6, label="round closes")
        pi = anytime.get("primal_integral_normalized")
        if pi is not None:
            ax.plot([], [], " ", label=f"primal integral / T = {pi:.4g} (T = {horizon:.3g} s)")
        for row in anytime.get("time_to_target", []):
            if row["seconds"] is not None and row["relative_gap"] is not None:
                ax.axvline(row["seconds"], color="#2ca02c", lw=0.8, ls=":", alpha=0.8)
                ax.annotate(
                    f"{row['relative_gap']:.2%}", (row["seconds"], 1.0), xycoords=("data", "axes fraction"),
                    fontsize=7, color="#2ca02c", ha="left", va="top",
                )  # fmt: skip
        ax.set_yscale("log")
        positive = [g for g in ys if g > _FLOOR]
        if positive:
            ax.set_ylim(bottom=max(min(positive) / 10, 1e-18), top=max(positive) * 10)
        ax.legend(fontsize=8, loc="upper right")
    else:
        ax.text(0.5, 0.5, "no time data in this report", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("seconds since the task was created")
    ax.set_ylabel(f"gap to {report.objective['reference_kind'].replace('_', ' ')}")
    task = report.task
    ax.set_title(f"{task['name']} — {report.status}, {report.merge_policy} merging, {report.agents} agents")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
