"""Leasing cost of the memory store as blocks and agents grow: main's per-lease scan against a heap.

One round per size n: n agents each lease a block, submit a proposal on it, and one commit gives every
proposal its verdict. Main's store scanned every block (and every lease and queued proposal) on each lease,
so a round cost O(n²); the heap makes a lease O(log n) amortised. That store (``coordinator/store/memory.py``
at ``--ref``, by default 68a3b2c, main before the heap) is loaded from git so both run side by side.

    .venv/bin/python benchmarks/lease_scaling.py                # n = 64 .. 4096
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from blockopt.testing.stores import head, proposal, spec, verdict  # noqa: E402
from coordinator.store.base import Commit, Store, TaskRuntime  # noqa: E402
from coordinator.store.memory import MemoryStore  # noqa: E402

MOVED = {
    "coordinator.ledger": "coordinator.reports.ledger",
    "coordinator.records": "coordinator.engine.records",
}
"""Modules the old store imports that the layered tree keeps elsewhere."""


def main_store(ref: str) -> type[Store]:
    source = subprocess.run(
        ["git", "show", f"{ref}:coordinator/store/memory.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "memory_main.py"
    path.write_text(source)
    loaded = importlib.util.spec_from_file_location("memory_main", path)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    sys.modules["memory_main"] = module  # dataclasses look their module up
    for old, new in MOVED.items():  # the old store's imports, on a tree where those modules moved
        try:
            importlib.import_module(old)
        except ImportError:
            sys.modules[old] = importlib.import_module(new)
    loaded.loader.exec_module(module)
    cls: type[Store] = module.MemoryStore
    return cls


async def one_round(store: Store, n: int) -> float:
    """Seconds for n leases (the part that scanned), after which the round is submitted and committed."""
    await store.create_task(spec("t", blocks=n), head(blocks=n))
    t0 = time.perf_counter()
    leases = [await store.acquire_lease("t", f"a-{i}", 0, 60.0, 1.0) for i in range(n)]
    seconds = time.perf_counter() - t0
    assert all(lease is not None for lease in leases) and len({lease.block for lease in leases if lease}) == n
    for i, lease in enumerate(leases):
        assert lease is not None
        await store.enqueue_proposal("t", lease.id, proposal(f"p{i}", lease.block, agent=f"a-{i}"), 1.0)
    fence = await store.acquire_round_lock("t", "r", 60.0, 1.0)
    assert fence is not None
    verdicts = [verdict(f"p{i}", lease.block) for i, lease in enumerate(leases) if lease]
    await store.commit(
        "t", Commit(expected_version=0, fence=fence, runtime=TaskRuntime(round=1), verdicts=verdicts)
    )
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 4096])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--ref",
        default="68a3b2c",
        help="git ref of the store to compare with (default: main before the heap)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "lease_scaling.json")
    args = ap.parse_args()
    old_cls = main_store(args.ref)
    rows: list[dict[str, Any]] = []
    print("| blocks = agents | main: ms per round of leases | heap: ms | main / heap |")
    print("|---:|---:|---:|---:|")
    for n in args.sizes:
        best: dict[str, float] = {}
        for _ in range(args.repeats):  # interleaved, best of repeats: the machine is shared
            for name, cls in (("main", old_cls), ("heap", MemoryStore)):
                s = asyncio.run(one_round(cls(), n))
                best[name] = min(best.get(name, float("inf")), s)
        rows.append({"n": n, "main_s": best["main"], "heap_s": best["heap"]})
        main_ms, heap_ms = best["main"] * 1e3, best["heap"] * 1e3
        print(f"| {n} | {main_ms:.1f} | {heap_ms:.1f} | {main_ms / heap_ms:.1f}x |", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"ref": args.ref, "repeats": args.repeats, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
