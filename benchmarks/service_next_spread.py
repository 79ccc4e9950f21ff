"""The spread of one case between runs of the same tree, with each run's per-round records (not a test).

Runs ``rounds/independent/next`` (64 agents, quadratic-64, one request per proposal) once per tree given,
in the order given (repeat a tree to see its own spread), and prints each run's proposals/s, server CPU per
request, rounds, and the first 40 rounds' proposals, interference edges and engine milliseconds. Used to
tell a regression from the run-to-run spread (BENCHMARKS.md, "coordinator/ by layer").

    .venv/bin/python benchmarks/service_next_spread.py SECONDS TREE [TREE ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

import service_throughput as st  # noqa: E402


def main() -> None:
    seconds, trees = float(sys.argv[1]), sys.argv[2:]
    for tree in trees:
        port = st.free_port()
        serve = st.start_serve(port, root=Path(tree))
        try:
            task = st.create_task(port, "rounds", "independent", 64)
            row = st.load("coordinator", port, task, 64, 2, seconds, serve.pid, 5.0, chain=True)
            _, recs = st.Conn(port, st.ADMIN).call("GET", f"/v1/tasks/{task['id']}/rounds")
            recs = recs if isinstance(recs, list) else recs.get("rounds", recs.get("items"))
            print(
                f"{tree} {row['proposals_per_s']:.0f}/s cpu/req {row['server_us_per_request']:.0f} "
                f"rounds {len(recs)}"
            )
            print("  proposals:", [r["proposals"] for r in recs][:40])
            print("  edges:", [r["interfering"] for r in recs][:40])
            print("  engine ms:", [round(1000 * r["engine_seconds"]) for r in recs][:40])
        finally:
            st.stop(serve)


if __name__ == "__main__":
    main()
