"""Pictures of a run: the gap per round on a log axis with the bound envelopes drawn over it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from coordinator.ledger import Report  # noqa: E402

_FLOOR = 1e-300


def convergence_plot(report: Report, path: str) -> str:
    """x = rounds completed; the envelopes are drawn at the rounds that merged (their steps t)."""
    hist = report.history
    gap0 = report.objective["initial"] - report.objective["reference"]
    xs = [0] + [h["round"] + 1 for h in hist]
    gaps = [max(gap0, _FLOOR)] + [max(h["gap"], _FLOOR) for h in hist]
    step_x = [0] + [h["round"] + 1 for h in hist if h["accepted"]]

    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    ax.semilogy(xs, gaps, "o-", ms=3, lw=1.5, color="#1f77b4", label="gap  $F_t - F_{ref}$")
    b = report.bound
    if b.envelope:
        label = f"envelope, all rounds (rate {b.rate:.3g}, floor {b.floor:.2g})"
        ax.semilogy(step_x[: len(b.envelope)], [max(v, _FLOOR) for v in b.envelope], "--",
                    color="#d62728", lw=1.2, label=label)
    if b.window_envelope:
        label = (f"envelope from first {b.envelope_window} rounds "
                 f"(held {b.envelope_rounds_held}/{b.envelope_rounds_checked} later rounds)")
        ax.semilogy(step_x[: len(b.window_envelope)], [max(v, _FLOOR) for v in b.window_envelope], ":",
                    color="#2ca02c", lw=1.5, label=label)
    regrouped = [h["round"] + 1 for h in hist if h.get("regrouped")]
    for k, x in enumerate(regrouped):  # empty rounds after which the blocks were re-partitioned
        ax.axvline(x, color="#9467bd", lw=0.8, ls=":", alpha=0.7,
                   label=f"blocks regrouped ({len(regrouped)}x)" if k == 0 else None)
    if b.floor and 0 < b.floor < float("inf"):
        ax.axhline(b.floor, color="#7f7f7f", lw=0.8, ls="-.", label=f"error floor Γδ/(γκ) = {b.floor:.2g}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    positive = [g for g in gaps if g > _FLOOR]
    if positive:
        ax.set_ylim(bottom=max(min(positive) / 10, 1e-18), top=max(positive) * 10)
    ax.set_xlabel("round")
    ax.set_ylabel(f"gap to {report.objective['reference_kind'].replace('_', ' ')}")
    task = report.task
    ax.set_title(f"{task['name']} — {report.merge_policy} merging, {report.agents} agents, "
                 f"bound held {b.rounds_held}/{b.rounds_checked}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
