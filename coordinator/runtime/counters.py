"""The store's per-task counters that a commit adds (verdicts by status and code, rounds, merges, checks)."""

from __future__ import annotations

from coordinator.engine.records import RoundRecord, Verdict


def counters_of(verdicts: list[Verdict], rec: RoundRecord | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for v in verdicts:
        out[v.status] = out.get(v.status, 0) + 1
        if v.status == "rejected":
            out[f"rejected:{v.code}"] = out.get(f"rejected:{v.code}", 0) + 1
        if v.repaired:
            out["repaired"] = out.get("repaired", 0) + 1
        if v.rebased:
            out["rebased"] = out.get("rebased", 0) + 1
    if rec is not None:
        out["rounds"] = 1
        out["edges"] = rec.interfering
        if rec.merge_kind != "none":
            out[f"merges:{rec.merge_kind}"] = 1
        if rec.regrouped:
            out["regroups"] = 1
        if rec.a_priori_held is not None:
            out["a_priori_held" if rec.a_priori_held else "a_priori_failed"] = 1
        elif rec.a_priori_precondition is not None:
            out["a_priori_precondition_failed"] = 1
        if rec.hit is not None:
            out["forecast_hits" if rec.hit else "forecast_misses"] = 1
        if rec.accounting_violations:
            out["accounting_violations"] = rec.accounting_violations
    return out
