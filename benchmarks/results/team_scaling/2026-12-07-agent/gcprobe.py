"""GC time in a virtual replay, per thread: python gcprobe.py SECONDS AGENTS SEED [MODE]"""
import gc, sys, threading, time, collections
sys.path.insert(0, "benchmarks/results/team_scaling")  # labrun.py
from labrun import replay_once
mode = sys.argv[4] if len(sys.argv) > 4 else "default"
spent = collections.Counter(); count = collections.Counter(); starts = {}
def cb(phase, info):
    tid = threading.get_ident()
    if phase == "start":
        starts[tid] = time.thread_time()
    else:
        spent[(threading.current_thread().name[:12], info["generation"])] += time.thread_time() - starts.pop(tid, time.thread_time())
        count[info["generation"]] += 1
gc.callbacks.append(cb)
if mode == "threshold":
    gc.set_threshold(50_000, 20, 100)
run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
print("objects", len(gc.get_objects()), "collections", dict(count))
by_gen = collections.Counter()
for (name, gen), s in spent.items(): by_gen[gen] += s
print("gc cpu by generation", {g: round(s, 2) for g, s in by_gen.items()}, "total", round(sum(by_gen.values()), 2))
top = collections.Counter()
for (name, gen), s in spent.items(): top[name] += s
print("gc cpu by thread", [(n, round(s, 2)) for n, s in top.most_common(6)])
print("agent cpu", round(sum(run["agent_cpu"]), 1), "coordinator busy", run["busy_fraction"], "final", run["final"], "at", run.get("soc_at"))
