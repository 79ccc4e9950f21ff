"""Every Redis key the store uses, in one table. Nothing else in the code spells a key name.

All keys start with the configurable prefix ``P`` (``blockopt:`` by default), so
several deployments (or tests) share one Redis without seeing each other and
``SCAN MATCH P*`` finds everything a deployment owns.

========================  ======  ==============================================================
key                       type    holds
========================  ======  ==============================================================
P tasks                   list    task ids in creation order
P engines                 zset    live round runners, scored by the time their heartbeat lapses
P task:ID:spec            string  ``TaskSpec`` JSON (fixed at creation)
P task:ID:meta            hash    ``n_blocks``; counters ``lease`` and ``proposal`` (grant and
                                  arrival sequence numbers); ``create`` (id of the creating call)
P task:ID:head            hash    ``version`` (decimal int, compared by the commit) and ``json``
                                  (``Head`` JSON)
P task:ID:runtime         hash    ``body`` (``TaskRuntime`` JSON), ``end`` (terminal status JSON,
                                  written once: a stop beats any later commit), ``fence`` and
                                  ``commit`` (token and id of the last applied commit)
P task:ID:fence           string  fencing-token counter: INCR at every round-lock grant
P task:ID:lock            hash    round lock: ``owner``, ``fence``, ``expires_at``
P task:ID:leases          hash    block -> lease as JSON array [id, agent, version, granted_at,
                                  expires_at, block] (times as exact decimal strings)
P task:ID:lease_exp       zset    block scored by ``expires_at`` (finds lapsed leases)
P task:ID:lease_ids       hash    lease id -> block
P task:ID:lease_agents    hash    agent id -> block of its active lease
P task:ID:lease_seq       hash    block -> sequence number of its last grant (least recently
                                  leased block first)
P task:ID:proposals       hash    proposal id -> ``QueuedProposal`` JSON (every acknowledged one)
P task:ID:pending         zset    proposal id scored by arrival sequence: the durable queue
P task:ID:pending_block   hash    pending proposal id -> block (a block with a pending proposal
                                  is not leased again)
P task:ID:verdicts        hash    proposal id -> ``Verdict`` JSON
P task:ID:rounds          list    ``RoundEntry`` JSON, index = round
P task:ID:counters        hash    counter name -> number (HINCRBYFLOAT)
P task:ID:usage           hash    JSON [agent, model, field] -> number
P task:ID:abandoned       hash    record id -> ``AbandonedLease`` JSON (leases ended without a
                                  proposal; their usage is also in ``usage``)
P task:ID:abandoned_at    zset    record id scored by its ``at`` (the recent ones, read per tick)
P task:ID:agents          hash    agent id -> ``AgentRecord`` JSON
P task:ID:agent_order     list    agent ids in join order
P task:ID:tokens          hash    agent token hash -> agent id
========================  ======  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "blockopt:"


@dataclass(frozen=True)
class TaskKeys:
    """The key names of one task."""

    spec: str
    meta: str
    head: str
    runtime: str
    fence: str
    lock: str
    leases: str
    lease_exp: str
    lease_ids: str
    lease_agents: str
    lease_seq: str
    proposals: str
    pending: str
    pending_block: str
    verdicts: str
    rounds: str
    counters: str
    usage: str
    abandoned: str
    abandoned_at: str
    agents: str
    agent_order: str
    tokens: str


@dataclass(frozen=True)
class KeySpace:
    prefix: str = DEFAULT_PREFIX

    @property
    def tasks(self) -> str:
        return f"{self.prefix}tasks"

    @property
    def engines(self) -> str:
        return f"{self.prefix}engines"

    def task(self, task_id: str) -> TaskKeys:
        base = f"{self.prefix}task:{task_id}:"
        return TaskKeys(**{name: base + name for name in TaskKeys.__dataclass_fields__})
