"""First merge, merges, proposals and final plan of the fresh.sh reports named: read.py LABEL..."""

import json
import sys

for label in sys.argv[1:]:
    r = json.load(open(f"/tmp/fresh/{label}.json"))
    merges = [m for row in r["history"] for m in row["merges"]]
    o = r["objective"]
    print(
        f"{label}: first merge at {merges[0][0]:.2f} s, merges {len(merges)}, proposals {r['proposals']}, "
        f"initial {o['initial']}, final {o['final']}, wall {r['wall_s']} s"
    )
