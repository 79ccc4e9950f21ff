"""The routing GIF: the drawing before (every frame a full redraw, re-quantized) and now, in one run.

The earlier ``draw_animation`` is read from a git revision (``--before-rev``, default the commit before the
blitting change) into a temporary module, so both draw the same plans in the same process, alternating.

    .venv/bin/python benchmarks/routing_pictures.py [--repeats 3] \
        [--json benchmarks/results/routing_pictures.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402

from tasks.registry import create_task  # noqa: E402
from tasks.routing import RoutingTask, draw  # noqa: E402

CASES = [("maze-32-32-2", 20), ("random-32-32-10", 100), ("warehouse-10-20-10-2-1", 200)]


def _module_at(rev: str) -> Any:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:tasks/routing/draw.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="draw-before-")) / "draw_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("draw_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before-rev", default="0f7a524", help="git revision with the earlier draw.py")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    before = _module_at(args.before_rev)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for map_name, k in CASES:
            task = create_task("routing", {"map": map_name, "robots": k, "initial": "shortest"})
            assert isinstance(task, RoutingTask)
            paths = task.initial_state().paths
            times: dict[str, list[float]] = {"before": [], "after": []}
            sizes: dict[str, int] = {}
            frames: dict[str, int] = {}
            for i in range(args.repeats):
                order = (
                    [("before", before), ("after", draw)]
                    if i % 2 == 0
                    else [("after", draw), ("before", before)]
                )
                for name, module in order:
                    out = os.path.join(tmp, f"{name}.gif")
                    t0 = time.perf_counter()
                    module.draw_animation(task.inst, paths, out)
                    times[name].append(time.perf_counter() - t0)
                    sizes[name] = os.path.getsize(out)
                    with Image.open(out) as gif:
                        frames[name] = gif.n_frames
            makespan = max(len(p) for p in paths) - 1
            row = {
                "instance": f"{map_name} k={k}",
                "makespan": makespan,
                "frames": frames,
                "before_s": [round(x, 3) for x in times["before"]],
                "after_s": [round(x, 3) for x in times["after"]],
                "ratio_median": round(
                    statistics.median(times["after"]) / statistics.median(times["before"]), 3
                ),
                "bytes": sizes,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, indent=1)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
