"""The bandit's bookkeeping (coordinator/engine/adaptive.py): credits, UCB1, ALNS, sizes, block order."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from coordinator.engine.adaptive import KEEP, Bandit, SelectionSettings, reward_of, row_of
from coordinator.engine.records import RoundRecord, SelectionRow

ARMS = [KEEP, "interaction", "random"]


def _bandit(policy: str = "ucb1", **kw: float) -> Bandit:
    return Bandit(list(ARMS), SelectionSettings.model_validate({"policy": policy, **kw}))


def _round(b: Bandit, gain: float, formed: str, seconds: float = 1.0, size: float | None = 0.5) -> None:
    b.credit(gain, SelectionRow(seconds=seconds, formed=formed, size=size))


def test_ucb_tries_every_arm_before_repeating_one() -> None:
    b = _bandit("ucb1")
    _round(b, 10.0, "interaction")  # credits KEEP (in force at the start); interaction in force next
    picked = b.choose(seed=1, merged=True)[0]
    assert picked != KEEP  # KEEP was tried: an untried arm comes first
    assert b.scores()[picked] == math.inf


def test_ucb_untried_arm_beats_a_paying_one() -> None:
    b = _bandit("ucb1")
    for _ in range(5):
        _round(b, 100.0, KEEP)
    assert b.gens[KEEP].pulls == 5
    assert b.choose(seed=0, merged=True)[0] == "interaction"


def test_ucb_prefers_the_arm_that_pays_once_all_are_tried() -> None:
    b = _bandit("ucb1", exploration=0.1)
    # KEEP pays 0, interaction pays 10/s, random pays 1/s
    schedule = [(0.0, "interaction"), (10.0, "random"), (1.0, KEEP)] * 6
    for gain, nxt in schedule:
        _round(b, gain, nxt)
    assert b.choose(seed=0, merged=True)[0] == "interaction"


def test_alns_arm_that_never_pays_loses_weight() -> None:
    b = _bandit("alns")
    _round(b, 0.0, "random")  # credits KEEP (in force at the start), then random is in force
    for _ in range(10):
        _round(b, 5.0, "random")
    assert b.gens["random"].weight > b.gens[KEEP].weight
    for _ in range(30):
        _round(b, 0.0, "random")
    assert b.gens["random"].weight == pytest.approx(b.settings.floor, abs=0.02)
    assert b.gens["random"].weight < b.gens[KEEP].weight
    assert b.gens["interaction"].weight == 1.0  # never used: untouched


def test_alns_weight_not_lowered_by_a_paying_round_must_fail_check() -> None:
    """The check above can fail: a generator that pays keeps a high weight."""
    b = _bandit("alns")
    _round(b, 1.0, "random")
    for _ in range(30):
        _round(b, 5.0, "random")
    assert b.gens["random"].weight > 0.5


def test_alns_draw_follows_the_wheel_and_is_reproducible() -> None:
    b = _bandit("alns", floor=0.01)
    b.gens[KEEP].weight, b.gens["interaction"].weight, b.gens["random"].weight = 0.01, 10.0, 0.01
    picks = [b.choose(seed=s, merged=True)[0] for s in range(200)]
    assert picks.count("interaction") > 180
    assert picks == [b.choose(seed=s, merged=True)[0] for s in range(200)]


def test_keep_is_never_chosen_after_a_round_that_merged_nothing() -> None:
    b = _bandit("ucb1")
    for _ in range(3):
        _round(b, 100.0, KEEP)  # KEEP pays best
    _round(b, 0.0, "interaction")  # (credits KEEP)
    _round(b, 0.0, "random")  # credits interaction
    _round(b, 0.0, KEEP)  # credits random: every arm tried, KEEP paid best
    assert b.choose(seed=0, merged=True)[0] == KEEP
    assert b.choose(seed=0, merged=False)[0] != KEEP
    only = Bandit([KEEP], SelectionSettings(policy="ucb1"))
    assert only.choose(seed=0, merged=False)[0] == KEEP  # no other arm: keep it all the same


def test_size_grows_after_a_gain_and_shrinks_after_none_within_bounds() -> None:
    b = _bandit("ucb1", size=0.5, min_size=0.2, max_size=0.8, growth=2.0)
    _round(b, 0.0, "random", size=0.5)  # random in force at size 0.5
    _round(b, 3.0, "random", size=0.8)
    assert b.gens["random"].size == pytest.approx(0.8)  # 0.5·2 capped at 0.8
    _round(b, 0.0, "random", size=0.8)
    assert b.gens["random"].size == pytest.approx(0.4)
    for size in (0.4, 0.2, 0.2):
        _round(b, 0.0, "random", size=size)
    assert b.gens["random"].size == pytest.approx(0.2)


def test_cost_is_tokens_when_reported_else_seconds() -> None:
    b = _bandit("ucb1")
    b.credit(10.0, SelectionRow(seconds=2.0, tokens=1000, formed=KEEP))
    assert b.gens[KEEP].cost == 1000.0
    b.credit(10.0, SelectionRow(seconds=2.0, formed=KEEP))
    assert b.gens[KEEP].cost == 1002.0
    assert reward_of(10.0, 0.0) == 10.0
    assert reward_of(-3.0, 1.0) == 0.0


def test_blocks_untried_first_then_by_gain_per_cost() -> None:
    b = _bandit("ucb1", exploration=0.0)
    b.credit(5.0, SelectionRow(seconds=3.0, blocks={0: (1.0, 1.0), 1: (9.0, 1.0), 2: (0.0, 1.0)}))
    assert b.block_order([0, 1, 2, 3]) == [3, 1, 0, 2]


def test_replay_is_incremental_and_matches_a_full_replay() -> None:
    recs = []
    objective = 100.0
    for r in range(12):
        objective -= r % 3
        formed = ARMS[r % 3]
        recs.append(
            RoundRecord(
                round=r,
                version=r,
                objective=objective,
                gap=objective,
                proposals=1,
                accepted=1,
                interfering=0,
                merge_kind="independent",
                kappa=None,
                gamma=None,
                delta=None,
                selection=SelectionRow(seconds=1.0 + r, formed=formed, size=0.5, blocks={r % 2: (1.0, 1.0)}),
            )
        )
    full = _bandit("alns").replay(100.0, recs)
    step = _bandit("alns").replay(100.0, recs[:5]).replay(100.0, recs)  # second call skips seen rounds
    assert full.view() == step.view()
    assert full.rounds == 12
    assert sum(a.pulls for a in full.gens.values()) == 12
    assert full.gens[KEEP].gain + full.gens["interaction"].gain + full.gens["random"].gain == pytest.approx(
        100.0 - objective
    )


def test_hold_is_refused_without_a_learning_policy() -> None:
    assert SelectionSettings(policy="alns", hold=True).hold
    with pytest.raises(ValidationError, match="hold needs a learning policy"):
        SelectionSettings(policy="lease_order", hold=True)


def test_settings_refuse_bad_bounds() -> None:
    with pytest.raises(ValidationError, match="min_size"):
        SelectionSettings(min_size=0.0)
    with pytest.raises(ValidationError, match="generators"):
        SelectionSettings(generators=[])
    with pytest.raises(ValidationError):
        SelectionSettings.model_validate({"policy": "thompson"})
    with pytest.raises(ValueError, match="repeat"):
        Bandit([KEEP, KEEP])


def test_row_of_sums_costs_and_gains_per_block() -> None:
    row = row_of([(0, 1.5, 0), (0, 0.5, 0), (2, 1.0, 300)], {0: 4.0}, ("random", 0.3))
    assert row.seconds == 3.0 and row.tokens == 300
    assert row.blocks == {0: (4.0, 2.0), 2: (0.0, 300.0)}
    assert (row.formed, row.size) == ("random", 0.3)


rounds_st = st.lists(
    st.tuples(
        st.floats(-5.0, 50.0, allow_nan=False),
        st.floats(0.0, 10.0, allow_nan=False),
        st.sampled_from(ARMS),
        st.floats(0.1, 1.0),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(rounds_st, st.sampled_from(["ucb1", "alns"]))
def test_books_invariants(rounds: list[tuple[float, float, str, float]], policy: str) -> None:
    b = _bandit(policy)
    total_gain = 0.0
    for gain, sec, formed, size in rounds:
        b.credit(gain, SelectionRow(seconds=sec, formed=formed, size=size))
        total_gain += max(0.0, gain)
    s = b.settings
    assert sum(a.pulls for a in b.gens.values()) == len(rounds) == b.rounds
    assert sum(a.gain for a in b.gens.values()) == pytest.approx(total_gain)
    for a in b.gens.values():
        assert s.min_size <= a.size <= s.max_size or a.size == s.size
        assert a.weight >= s.floor
        assert a.weight <= 1.0 + 1e-9  # ψ is normalized into [0, 1]
    pick, size = b.choose(seed=len(rounds), merged=True)
    assert pick in ARMS and 0 < size <= 1
    view = b.view()
    assert set(view["generators"]) == set(ARMS)


def test_a_huge_first_round_does_not_flatten_later_rewards() -> None:
    """Conflict repair gains orders of magnitude more than later rounds: the sliding maximum forgets it."""
    from coordinator.engine.adaptive import WINDOW

    b = _bandit("ucb1", exploration=0.0)
    _round(b, 1e9, "random")  # credits KEEP
    for _ in range(3 * WINDOW):
        _round(b, 2.0, "random")
    assert b.gens["random"].mean() > 0.6
    assert b.gens[KEEP].mean() == 1.0


def test_former_judges_the_arm_in_force_on_this_round_before_choosing() -> None:
    from coordinator.engine.adaptive import former_of

    calls: list[tuple[str, float, int]] = []

    class Kind:
        def neighbourhoods(self) -> tuple[str, ...]:  # (with form_blocks: the Neighbourhoods capability)
            return tuple(ARMS)

        def form_blocks(
            self, state: object, generator: str, size: float, attempt: int, keep: frozenset[int]
        ) -> str:
            calls.append((generator, size, attempt))
            return "regrouped"

    b = Bandit(list(ARMS), SelectionSettings(policy="ucb1", every_round=True))
    formed: list[tuple[str, float]] = []
    form = former_of(Kind(), b, "t-1", 7, 100.0, [(0, 1.0, 0)], formed)
    assert form("state", 90.0) == "regrouped"
    assert formed == [("interaction", 0.5)]  # KEEP (in force) just paid this round: the next untried arm
    assert calls == [("interaction", 0.5, 7)]
    assert b.rounds == 0 and b.gens[KEEP].pulls == 0  # the real bandit learns from the stored record only


def test_former_keeps_blocks_that_paid_unless_told_to_regroup_every_round() -> None:
    from coordinator.engine.adaptive import former_of

    class Kind:
        n_blocks = 3

        def neighbourhoods(self) -> tuple[str, ...]:  # (with form_blocks: the Neighbourhoods capability)
            return tuple(ARMS)

        def form_blocks(
            self, state: object, generator: str, size: float, attempt: int, keep: frozenset[int]
        ) -> str:
            return generator

    formed: list[tuple[str, float]] = []
    stall_only = former_of(Kind(), _bandit("ucb1"), "t-1", 3, 100.0, [], formed)
    assert stall_only("s", 90.0) is None and formed == []  # the round merged: the blocks stay
    assert stall_only("s", 100.0) == "interaction"  # nothing merged: regroup, never keep
    every = Bandit(list(ARMS), SelectionSettings(policy="ucb1", every_round=True))
    assert former_of(Kind(), every, "t-1", 3, 100.0, [], [])("s", 90.0) == "interaction"


def test_hold_forms_the_blocks_that_did_not_pay_and_keeps_the_others() -> None:
    from coordinator.engine.adaptive import former_of

    seen: list[tuple[str, frozenset[int]]] = []

    class Kind:
        n_blocks = 3

        def neighbourhoods(self) -> tuple[str, ...]:  # (with form_blocks: the Neighbourhoods capability)
            return tuple(ARMS)

        def form_blocks(
            self, state: object, generator: str, size: float, attempt: int, keep: frozenset[int]
        ) -> str:
            seen.append((generator, keep))
            return "formed"

    b = Bandit(list(ARMS), SelectionSettings(policy="ucb1", hold=True))
    b.gens["interaction"].pulls = 1  # so the untried-first rule does not decide alone
    formed: list[tuple[str, float]] = []
    form = former_of(Kind(), b, "t-1", 4, 100.0, [(0, 1.0, 0)], formed)
    assert form("s", 90.0, frozenset({0})) == "formed"
    assert seen == [("random", frozenset({0}))]  # never the keep arm: the paid block stays anyway
    assert formed == [("random", 0.5)]


def test_hold_leaves_the_blocks_when_fewer_than_two_did_not_pay() -> None:
    """The failing input of the rule above: one unpaid block has nothing to trade robots with."""
    from coordinator.engine.adaptive import former_of

    class Kind:
        n_blocks = 3

        def neighbourhoods(self) -> tuple[str, ...]:  # (with form_blocks: the Neighbourhoods capability)
            return tuple(ARMS)

        def form_blocks(
            self, state: object, generator: str, size: float, attempt: int, keep: frozenset[int]
        ) -> str:
            raise AssertionError("must not be asked")

    b = Bandit(list(ARMS), SelectionSettings(policy="alns", hold=True))
    formed: list[tuple[str, float]] = []
    assert former_of(Kind(), b, "t-1", 4, 100.0, [], formed)("s", 90.0, frozenset({0, 2})) is None
    assert formed == []
    without = Bandit(list(ARMS), SelectionSettings(policy="alns"))  # no hold: a round that paid keeps all
    assert former_of(Kind(), without, "t-1", 4, 100.0, [], formed)("s", 90.0, frozenset({0})) is None
