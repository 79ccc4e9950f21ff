"""Per run: final SOC, leases, LNS steps and what the verdicts were, in 0-10 s and 10-30 s after the
first LNS step (runs of run.sh on a tree patched by instrument.py; tag = e<agents>b<blocks>_<seed>)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main(tags: list[str]) -> None:
    print(
        "| run | SOC at 30 s | phase | leases | LNS steps | merged (repaired) | gain merged"
        " | predicted, turned down |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for tag in tags:
        leases = [json.loads(x) for x in (HERE / f"{tag}.leases.jsonl").read_text().splitlines()]
        verdicts = [json.loads(x) for x in (HERE / f"{tag}.verdicts.jsonl").read_text().splitlines()]
        report = json.loads((HERE / f"{tag}.report.json").read_text())
        t0 = min(r["t"] - r["s"] for r in leases)
        for lo, hi in ((0, 10), (10, 30)):
            ls = [r for r in leases if lo <= r["t"] - t0 < hi]
            vs = [r for r in verdicts if lo <= r["t"] - t0 < hi]
            merged = [r for r in vs if r["code"] == "merged"]
            repaired = sum("repaired" in (r["reason"] or "") for r in merged)
            lost = sum(r["pred"] for r in vs if r["code"] != "merged")
            print(
                f"| {tag} | {report['objective']['final']:.0f} | {lo}-{hi} s | {len(ls)} | "
                f"{sum(r['it'] for r in ls)} | {len(merged)} ({repaired}) | "
                f"{sum(r['delta'] for r in merged):.0f} | "
                f"{lost:.0f} |"
            )


if __name__ == "__main__":
    main(sys.argv[1:] or sorted({p.name.split(".")[0] for p in HERE.glob("*.report.json")}))
