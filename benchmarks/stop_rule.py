"""The stop rule, side by side: the count of empty rounds (the old default) against the time-weighed default.

Real runs through the product's path (``blockopt run routing``: embedded coordinator, agent processes over
HTTP), 3 agents, a time limit, per map and seed. The old rule is reproduced exactly by
``--stall-seconds 1e-9`` (stall after k empty rounds, any quiet time). Arms are interleaved per seed, so the
shared machine's load hits both alike. Prints final objective, stop time, status and the primal integral.

    .venv/bin/python benchmarks/stop_rule.py --out benchmarks/results/stop_rule
    .venv/bin/python benchmarks/stop_rule.py --maps room-32-32-4 --seeds 1 --limit 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARMS = {"count (old)": ["--stall-seconds", "1e-9"], "time (new)": []}


def run(
    map_name: str, seed: int, limit: float, robots: int, extra: list[str], report: Path
) -> dict[str, object]:
    cmd = [
        sys.executable, "-m", "blockopt", "run", "routing", "--map", map_name, "--scen", "random-1",
        "--robots", str(robots), "--seed", str(seed), "--agents", "3", "--time-limit", str(limit),
        "--quiet", "--report", str(report), *extra,
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=limit * 4 + 120)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-500:]}")
    data = json.loads(report.read_text())
    anytime = data["anytime"]
    return {
        "final": data["objective"]["final"],
        "reference": data["objective"]["reference"],
        "stop_s": data["wall_s"],
        "rounds": data["rounds"],
        "status": data["status"],
        "last_improvement_s": anytime["points"][-1][0],
        "primal_integral_normalized": anytime["primal_integral_normalized"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--maps", nargs="+", default=["random-32-32-10", "room-32-32-4"])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--robots", type=int, default=50)
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/stop_rule"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    print(f"routing k={args.robots}, 3 agents, --time-limit {args.limit:g}; old rule = --stall-seconds 1e-9")
    print("| map | seed | rule | final | LB | stop s | last improvement s | rounds | status | PI/T |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---:|")
    for map_name in args.maps:
        for seed in range(1, args.seeds + 1):
            for arm, extra in ARMS.items():
                report = args.out / f"{map_name}-s{seed}-{arm.split()[0]}.json"
                r = run(map_name, seed, args.limit, args.robots, extra, report)
                rows.append({"map": map_name, "seed": seed, "rule": arm, **r})
                print(
                    f"| {map_name} | {seed} | {arm} | {r['final']:g} | {r['reference']:g} | "
                    f"{r['stop_s']:.1f} | {r['last_improvement_s']:.1f} | {r['rounds']} | {r['status']} | "
                    f"{r['primal_integral_normalized']:.5f} |",
                    flush=True,
                )
    (args.out / "stop_rule.json").write_text(json.dumps(rows, indent=2))
    for map_name in args.maps:
        pairs = [
            (old, new)
            for old in rows
            for new in rows
            if old["map"] == new["map"] == map_name and old["seed"] == new["seed"]
            and old["rule"] == "count (old)" and new["rule"] == "time (new)"
        ]  # fmt: skip
        gain = statistics.median(float(o["final"]) - float(n["final"]) for o, n in pairs)  # type: ignore[arg-type]
        longer = statistics.median(float(n["stop_s"]) / float(o["stop_s"]) for o, n in pairs)  # type: ignore[arg-type]
        print(
            f"{map_name}: median final objective lower by {gain:g} with the new rule; stop time x{longer:.2f}"
        )


if __name__ == "__main__":
    main()
