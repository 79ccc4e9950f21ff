"""How ``BlockSearch.adopt`` (an answer's ``put_back``) spends its calls in a replay: checks of a walked
robot's old path, robots given back, ms a call. A check after the first pass is one a filter could skip.

    PYTHONPATH=. .venv/bin/python $L/passes.py SECONDS AGENTS SEED    # from a checkout's root
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labrun import replay_once  # noqa: E402

from tasks.routing import repair  # noqa: E402

stats: collections.Counter[str] = collections.Counter()
original = repair.BlockSearch.adopt


def adopt(self: Any, wanted: Mapping[int, Any]) -> int:
    full = self.full
    inner = full.path_conflicts_without
    checks = [0]

    def counted(a: Any, b: Any) -> int:
        checks[0] += 1
        return int(inner(a, b))

    full.path_conflicts_without = counted
    t0 = time.thread_time()
    try:
        got = original(self, wanted)
    finally:
        del full.path_conflicts_without
    stats["calls"] += 1
    stats["checks"] += checks[0]
    stats["adopted"] += got
    stats["walked"] += sum(1 for i, p in wanted.items() if self.paths[i] is not p) + got
    stats["cpu"] += time.thread_time() - t0
    return got


def main() -> None:
    repair.BlockSearch.adopt = adopt  # type: ignore[method-assign]
    replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
    print({k: round(v, 2) for k, v in stats.items()})
    n = stats["calls"]
    print(
        f"checks per call {stats['checks'] / n:.1f}, adopted per call {stats['adopted'] / n:.1f},"
        f" ms per call {1000 * stats['cpu'] / n:.1f}"
    )


if __name__ == "__main__":
    main()
