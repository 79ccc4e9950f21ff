"""Virtual replays with the agents' pause after a lease that found nothing set by PAUSE (seconds; the
worker's 0.05 when unset), one line per run and each run's commits as JSON.

With OPENING_ONLY=1 the proposer answers early (answer_on_gain) only on the opening's leases.
The tree of 8bae93d (before the proposer's retry_pause): the pause is the replay's 0.05 s, shifted.

Run from a checkout: PAUSE=0 OPENING_ONLY=1 TAG=name PYTHONPATH=. .venv/bin/python THIS AGENTS SECONDS
OUTDIR SEED..."""

import json
import os
import sys

from lab import Q, at, routing_config, to


def with_pause(vt, pause: float) -> None:
    """The replay's abandon, with ``pause`` where it waits 0.05 s before the next lease."""
    abandon = vt.Replay._on_abandon

    async def on_abandon(self, agent, at, lease, took):  # type: ignore[no-untyped-def]
        push = self.queue.push

        def shifted(when, kind, index=-1, payload=None):  # type: ignore[no-untyped-def]
            push(when - 0.05 + pause if kind == "lease" else when, kind, index, payload)

        self.queue.push = shifted
        try:
            await abandon(self, agent, at, lease, took)
        finally:
            self.queue.push = push

    vt.Replay._on_abandon = on_abandon


def early_answers_in_the_opening_only() -> None:
    """The proposer answers early only on an opening lease (its contract asks for ``search_seconds``): the
    contract's text is left as the coordinator renders it, so the coordinator's cost is the tree's."""
    from tasks.routing import lns

    propose = lns.RoutingProposer.propose

    def opening_only(self, contract):  # type: ignore[no-untyped-def]
        if contract["data"].get("answer_on_gain") and "search_seconds" not in contract["data"]:
            contract = {**contract, "data": {**contract["data"], "answer_on_gain": False}}
        return propose(self, contract)

    lns.RoutingProposer.propose = opening_only


if __name__ == "__main__":
    from benchmarks.lib import virtual_team as vt

    agents, secs, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    tag = os.environ.get("TAG", "pause")
    if "PAUSE" in os.environ:
        with_pause(vt, float(os.environ["PAUSE"]))
    if os.environ.get("OPENING_ONLY"):
        early_answers_in_the_opening_only()
    for seed in (int(s) for s in sys.argv[4:]):
        r = vt.replay(routing_config(agents, seed, secs))
        busy = sum(r.agent_cpu) / (agents * (secs - r.agent_start))
        heads = " ".join(f"@{t}:{at(r.commits, t)}" for t in (3, 5, 8, 10, 15, 20, 30) if t <= secs)
        times = " ".join(f"{q}:{to(r.commits, q)}" for q in (7400, 7300, 7200, 7150))
        print(
            f"{tag} N={agents} seed={seed} coordinator={r.summary()['busy_fraction']:.0%} agents={busy:.0%}"
            f" merged={r.accepted} answers={r.proposals} found-nothing={r.abandoned} {heads} | to {times}"
            f" Q {Q[seed]}:{to(r.commits, Q[seed])}",
            flush=True,
        )
        with open(os.path.join(out, f"commits-{tag}-n{agents}-s{seed}.json"), "w") as f:
            json.dump(r.commits, f)
