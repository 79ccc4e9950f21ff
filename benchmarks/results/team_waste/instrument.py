# ruff: noqa: E501, E401, F401, I001
"""Patch this checkout for run.sh: log each lease's LNS steps (lns.py) and each verdict (worker.py) to $LNS_LOG.
Not part of the product: revert with git checkout tasks/routing/lns.py agents/worker.py."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
p = ROOT / "tasks/routing/lns.py"
s = open(p).read()
if "LNS_LOG" not in s:
    s = s.replace(
        """        best = search.paths
        if best_value >= initial:""",
        """        best = search.paths
        import os, json as _j
        if os.environ.get("LNS_LOG"):
            with open(os.environ["LNS_LOG"], "a") as _f:
                _f.write(_j.dumps({"pid": os.getpid(), "block": block, "n": len(robots), "it": iterations, "s": time.perf_counter() - started, "tbl": t_table, "gain": initial - best_value, "t": time.time()}) + "\\n")
        if best_value >= initial:""",
    )
    open(p, "w").write(s)
p = ROOT / "agents/worker.py"
s = open(p).read()
if "LNS_LOG" not in s:
    s = s.replace(
        """        if verdict is not None:
            self.stats.verdicts""",
        """        import os, json as _j
        if verdict is not None and os.environ.get("LNS_LOG"):
            with open(os.environ["LNS_LOG"] + ".v", "a") as _f:
                _f.write(_j.dumps({"lease_v": lease["version"], "block": draft.block, "code": verdict["code"], "reason": verdict.get("reason"), "delta": verdict.get("delta"), "pred": draft.predicted_improvement, "t": time.time()}) + "\\n")
        if verdict is not None:
            self.stats.verdicts""",
    )
    open(p, "w").write(s)
