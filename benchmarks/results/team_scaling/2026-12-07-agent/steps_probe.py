"""Where a team agent's CPU goes: LNS steps (try_group), the neighbourhood draw, the rest. python steps_probe.py SECONDS AGENTS SEED"""
import sys, time, collections, cProfile, pstats, threading
sys.path.insert(0, "benchmarks/results/team_scaling")
from labrun import replay_once
from tasks.routing import lns, repair
spent = collections.Counter()
def timed(name, fn):
    def wrapped(*a, **k):
        t = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            spent[name] += time.thread_time() - t
    return wrapped
repair.BlockSearch.try_group = timed("try_group", repair.BlockSearch.try_group)
lns.RoutingProposer._neighbourhood = timed("neighbourhood", lns.RoutingProposer._neighbourhood)
lns.RoutingProposer._follow = timed("follow", lns.RoutingProposer._follow)
lns.RoutingProposer.propose = timed("propose", lns.RoutingProposer.propose)
orig_init = repair.BlockSearch.__init__
repair.BlockSearch.__init__ = timed("search_build", orig_init)
run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
print({k: round(v, 2) for k, v in spent.items()}, "agent cpu", round(sum(run["agent_cpu"]), 1))
