"""What the team-scaling lab probes share: one virtual replay of random-32-32-10 k = 300 with the probe's
hooks installed, its totals printed, answers' refusals by the commits between their base and the head, and a
timer that adds up a function's thread CPU.

Not a product module. A lab script imports it from here (its parent folder, which the script puts on
``sys.path``) rather than from ``benchmarks/lib``, so that it runs from a checkout of an older tree, as its
COMMANDS.md says.
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

TOTALS = ("final", "proposals", "accepted", "abandoned", "rejected_by_reason", "busy_fraction")


def replay_once(
    seconds: str,
    agents: int,
    seed: int,
    rest: Sequence[str],
    at: Sequence[str] = ("5",),
    out: str = "/dev/null",
) -> dict[str, Any]:
    """One replay after an unmeasured warm-up (``team_scaling virtual``'s own run, options ``rest`` added);
    prints the command line and the run's totals."""
    from benchmarks import team_scaling as ts

    run_args = ts.parse(
        ["virtual", "--robots", "300", "--agents", str(agents), "--seeds", str(seed), "--time", seconds,
         "--at", *at, "--out", out, *rest]
    )  # fmt: skip
    ts.warm_up(run_args)
    run: dict[str, Any] = ts.virtual_run(run_args, agents, seed)
    print(" ".join(sys.argv[1:]))
    print({k: run[k] for k in TOTALS}, "agent CPU", round(sum(run["agent_cpu"]), 1))
    return run


def print_refused_by_commits(rows: Iterable[tuple[str, int]]) -> None:
    """(verdict code, commits between the answer's base and the head it met) per answer: how many answers and
    the share refused, by commits (6 and more together)."""
    by_gap: dict[int, list[str]] = collections.defaultdict(list)
    for code, gap in rows:
        by_gap[min(gap, 6)].append(code)
    for gap, codes in sorted(by_gap.items()):
        refused = sum(c != "merged" for c in codes) / len(codes)
        label = gap if gap < 6 else "6+"
        print(f"  commits between base and head {label:>2}: {len(codes):4d} answers, {refused:.0%} refused")


def thread_cpu(
    spent: collections.Counter[str],
    name: str,
    fn: Callable[..., Any],
    calls: collections.Counter[str] | None = None,
) -> Callable[..., Any]:
    """``fn``, adding the thread CPU of each call to ``spent[name]`` (and one to ``calls[name]``): a replay
    books each agent's calls on its own thread, so thread CPU is what its virtual clock counts."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.thread_time() - t0
            if calls is not None:
                calls[name] += 1

    return timed
