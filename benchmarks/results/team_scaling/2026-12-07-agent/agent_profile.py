"""cProfile of the agents' propose calls in a virtual replay: python agent_profile.py SECONDS AGENTS SEED OUT"""
import sys, cProfile, pstats, threading
sys.path.insert(0, "benchmarks/results/team_scaling")  # labrun.py
from labrun import replay_once
from tasks.routing import lns
profiles = []
lock = threading.Lock()
orig = lns.RoutingProposer.propose
def propose(self, contract):
    pr = cProfile.Profile()
    pr.enable()
    try:
        return orig(self, contract)
    finally:
        pr.disable()
        with lock:
            profiles.append(pr)
lns.RoutingProposer.propose = propose
run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
st = pstats.Stats(profiles[0])
for p in profiles[1:]:
    st.add(p)
with open(sys.argv[4], "w") as f:
    st.stream = f
    print("calls", len(profiles), "agent cpu", round(sum(run["agent_cpu"]), 1), file=f)
    st.sort_stats("cumulative").print_stats(45)
    st.sort_stats("tottime").print_stats(30)
    st.print_callers("path_conflicts|_settle|scan_change|occupancy.py:61.build")
st.dump_stats(sys.argv[4] + ".prof")
