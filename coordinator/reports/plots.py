"""Pictures of a run: the gap per round on a log axis, its one-step forecasts and the forecast ahead.

A bound that carries no information (a floor above the gap, an envelope far above it) is not drawn: the
legend says so instead.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from coordinator.reports.ledger import Report  # noqa: E402

_FLOOR = 1e-300
VACUOUS = 100.0
"""An envelope more than this many times above the gap (median) says nothing worth drawing."""


def convergence_plot(report: Report, path: str) -> str:
    """x = rounds completed (every round is a step)."""
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
    for k, x in enumerate(regrouped):  # empty rounds after which the blocks were re-partitioned
        ax.axvline(
            x,
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
