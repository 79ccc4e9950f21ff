"""What the user reads: the per-query before/after table with baselines, and a bar chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MIB = 2**20


def solution(task: Any, state: Any, with_baselines: bool = False) -> dict[str, Any]:
    """Per-query table and plans; baselines only when asked (they take seconds to a minute to measure)
    or already measured, so that serving the solution over HTTP stays fast."""
    base = task.baselines() if with_baselines else task.known_baselines()
    rows = []
    for k, q in enumerate(task.qids):
        row: dict[str, Any] = {"query": q}
        for b in base:
            row[b.name] = b.per_query[q]
        row["final"] = state.outcomes[k].cost
        row["equivalent"] = state.outcomes[k].ok
        rows.append(row)
    totals = {b.name: b.total for b in base} | {"final": sum(o.cost for o in state.outcomes)}
    return {
        "per_query": rows,
        "totals": totals,
        "baselines": {b.name: b.to_json() for b in base},
        "index_bytes": task.index_bytes(state.indexes),
        "budget_bytes": task.budget,
        "indexes": [i.label() for i in sorted(state.indexes)],
        "plans": {q: p.to_json() for q, p in zip(task.qids, state.plans) if not p.is_default},
        "all_equivalent": all(o.ok for o in state.outcomes),
        "default_lower_bound": {
            q: {"cost_at_least": task.ev.default_cost[q], "reference_rows_from": src}
            for q, src in sorted(task.ev.reference_source.items())
        },
    }


def table_text(sol: dict[str, Any]) -> str:
    cols = [c for c in sol["per_query"][0] if c not in ("query", "equivalent")]
    lines = ["query " + " ".join(f"{c:>16s}" for c in cols) + "  equiv"]
    for r in sol["per_query"]:
        lines.append(f"{r['query']:<6s}" + " ".join(f"{r[c]:>16d}" for c in cols) + f"  {r['equivalent']}")
    lines.append("total " + " ".join(f"{sol['totals'][c]:>16d}" for c in cols))
    sizes = {n: b["index_bytes"] for n, b in sol["baselines"].items()} | {"final": sol["index_bytes"]}
    lines.append("MiB   " + " ".join(f"{sizes.get(c, 0) / MIB:>16.2f}" for c in cols))
    return "\n".join(lines)


def bar_chart(sol: dict[str, Any], path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = sol["per_query"]
    series = [c for c in rows[0] if c not in ("query", "equivalent")]
    x = np.arange(len(rows))
    width = 0.8 / len(series)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(15, 5), gridspec_kw={"width_ratios": [4, 1]})
    for k, name in enumerate(series):
        ax.bar(x + k * width, [max(r[name], 0.5) for r in rows], width, label=name)
    ax.set_yscale("log")
    ax.set_xticks(x + 0.4 - width / 2, [r["query"] for r in rows], rotation=60)
    ax.set_ylabel("cost (progress callbacks / 1,000 VM steps, log)")
    ax.set_title("per-query cost: baselines vs the team's plans")
    ax.legend(fontsize=8, ncol=len(series), loc="upper center", bbox_to_anchor=(0.5, -0.14))
    totals = [sol["totals"][s] for s in series]
    ax2.bar(range(len(series)), totals, color=[f"C{k}" for k in range(len(series))])
    ax2.set_xticks(range(len(series)), series, rotation=60, fontsize=8)
    ax2.set_title("workload total")
    for k, t in enumerate(totals):
        ax2.text(k, t, f"{t:,}", ha="center", va="bottom", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_query_reports(task: Any, state: Any, stem: str) -> list[str]:
    """Prints the per-query table (measuring the baselines, so the report's solution carries them) and
    draws the chart."""
    sol = solution(task, state, with_baselines=True)
    print(table_text(sol))
    table = Path(stem + "-queries.txt")
    table.write_text(table_text(sol) + "\n")
    return [str(table), bar_chart(sol, stem + "-queries.png")]
