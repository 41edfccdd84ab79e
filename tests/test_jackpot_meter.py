"""Jackpot meter: exact increments (PT-2001 r.40, r.41), seed (r.44), hits pending until paid (r.49)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.jackpot import JackpotError
from controller.jackpot.config import JackpotConfig
from controller.jackpot.hits import Award, Combination, allocate
from controller.jackpot.meter import (
    UNIT,
    MeterState,
    contribute,
    correct,
    freeze,
    pay,
    reconfigure,
    reject,
)


def cfg(**kw: object) -> JackpotConfig:
    base = {
        "enabled": True,
        "mode": "automatic",
        "bet_value": 100,
        "increment_bp": 333,
        "reserve_bp": 7,
        "seed": 1_000_000,
        "currency": "EUR",
    }
    return JackpotConfig.from_dict({**base, **kw})


def test_million_contributions_lose_no_cent_pt2001_r40() -> None:
    """3.33 % of a 1.00 bet is 3.33 cents; 0.07 % to the reserve: a million bets, one at a time, exact."""
    state = MeterState.initial(cfg())
    for i in range(1_000_000):
        state, _ = contribute(state, 1, f"r{i}")
    assert state.display_value == 1_000_000 + 3_330_000
    assert state.meter_units == (1_000_000 + 3_330_000) * UNIT
    assert state.reserve_units == 70_000 * UNIT
    state.check_invariants()


def test_sub_cent_remainder_is_carried_not_dropped() -> None:
    """1 bp of a 1-cent bet is 1/10,000 cent: the display moves only after 10,000 bets."""
    state = MeterState.initial(cfg(bet_value=1, increment_bp=1, reserve_bp=0, seed=10_000))
    state, _ = contribute(state, 9_999, "r")
    assert state.display_value == 10_000
    state, rec = contribute(state, 1, "r")
    assert state.display_value == 10_001 and rec.data["to_meter_units"] == 1


def test_correction_is_recorded_with_who_and_why() -> None:
    state = MeterState.initial(cfg())
    state, rec = correct(state, 999_000, "supervisor-7", "sign glitch, recount")
    assert state.display_value == 999_000
    assert rec.kind == "correct" and rec.data["who"] == "supervisor-7"
    assert rec.data["delta_units"] == -1000 * UNIT
    state.check_invariants()
    for who, reason in [("", "x"), ("sup", " ")]:
        with pytest.raises(JackpotError, match="required"):
            correct(state, 1, who, reason)
    with pytest.raises(JackpotError, match="new_value"):
        correct(state, -1, "sup", "x")


def test_parameters_change_only_between_rounds_pt2001_r40() -> None:
    state = MeterState.initial(cfg())
    with pytest.raises(JackpotError, match="only between rounds"):
        reconfigure(state, cfg(increment_bp=400), between_rounds=False)
    new, rec = reconfigure(state, cfg(increment_bp=400), between_rounds=True)
    assert new.increment_bp == 400 and rec.data["changes"] == {"increment_bp": {"old": 333, "new": 400}}
    assert new.meter_units == state.meter_units  # a parameter change never moves the meter
    with pytest.raises(JackpotError, match="currency"):
        reconfigure(state, cfg(currency="USD"), between_rounds=True)


def test_hit_is_pending_until_paid_then_meter_resets_to_seed_plus_reserve_pt2001_r49() -> None:
    state = MeterState.initial(cfg(increment_bp=5000, reserve_bp=1000))
    state, _ = contribute(state, 7, "r1")  # meter +350, reserve +70
    assert (state.display_value, state.reserve_value) == (1_000_350, 70)
    awards = allocate(state, [(3, Combination.TWO_ACES_MIXED), (5, Combination.FOUR_ACES_ONE_COLOUR)])
    assert [(a.seat, a.amount) for a in awards] == [(3, 2_500), (5, 997_850)]
    state, _ = freeze(state, awards, "r2")
    assert state.flagged_seats() == [3, 5] and not state.ok
    with pytest.raises(JackpotError, match="pending"):
        contribute(state, 1, "r3")  # r.49: the winning hand stays until paid
    with pytest.raises(JackpotError, match="smaller and must be paid first"):
        pay(state, 2, "sup")  # r.50a: smallest first
    state, recs = pay(state, 1, "sup")
    assert state.display_value == 997_850 and [r.kind for r in recs] == ["pay"]
    state, recs = pay(state, 2, "sup")
    assert [r.kind for r in recs] == ["pay", "reset"]
    assert state.display_value == 1_000_000 + 70 and state.reserve_units == 0 and state.ok
    state.check_invariants()


def test_freeze_refuses_bad_awards() -> None:
    state = MeterState.initial(cfg())
    with pytest.raises(JackpotError, match="amount -5"):
        freeze(state, [Award(2, Combination.TWO_ACES_MIXED, -5)], "r")
    with pytest.raises(JackpotError, match="exceeds the meter"):
        freeze(state, [Award(2, Combination.FOUR_ACES_ONE_COLOUR, 1_000_001)], "r")


def test_rejected_hit_leaves_meter_unchanged() -> None:
    state = MeterState.initial(cfg())
    state, _ = freeze(state, [Award(2, Combination.FOUR_ACES_ONE_COLOUR, 1_000_000)], "r")
    before = state.meter_units
    state, recs = reject(state, 1, "sup", "card misread")
    assert state.meter_units == before and state.ok and [r.kind for r in recs] == ["reject"]


def test_state_round_trips_and_bad_state_is_named() -> None:
    state = MeterState.initial(cfg())
    state, _ = contribute(state, 3, "r")
    state, _ = freeze(state, allocate(state, [(1, Combination.TWO_ACES_SUITED)]), "r")
    assert MeterState.from_dict(state.to_dict()) == state
    d = state.to_dict()
    d["meter_units"] += 1
    with pytest.raises(JackpotError, match="meter_units"):
        MeterState.from_dict(d)
    d = state.to_dict()
    d["bets"] = "3"
    with pytest.raises(JackpotError, match=r"bets: expected an integer"):
        MeterState.from_dict(d)


# ---- property: the invariant holds after any history, checked against an independent ledger ----------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("contribute"), st.integers(0, 7)),
        st.tuples(st.just("correct"), st.integers(0, 5_000_000)),
        st.tuples(
            st.just("hit"),
            st.lists(st.tuples(st.integers(1, 7), st.sampled_from(list(Combination))), max_size=4),
        ),
        st.tuples(st.just("pay"), st.integers(0, 3)),
        st.tuples(st.just("reject"), st.integers(0, 3)),
        st.tuples(st.just("reconfigure"), st.tuples(st.integers(1, 500), st.integers(0, 6000))),
    ),
    max_size=40,
)


@settings(deadline=None, max_examples=150)
@given(ops, st.integers(1, 300), st.integers(0, 10_000), st.integers(0, 3000))
def test_meter_invariant_holds_after_any_history(history: list, bet: int, inc: int, res: int) -> None:
    """meter == seeds + contributions - paid + corrections (+ reserve moved in), exactly; the meter only goes
    down by a paid hit or a correction (PT-2001 r.43, r.44, r.49)."""
    res = min(res, 10_000 - inc)
    state = MeterState.initial(cfg(bet_value=bet, increment_bp=inc, reserve_bp=res, seed=10_000 * bet))
    ledger = Fraction(state.seed)  # minor units, kept by the test itself
    reserve = Fraction(0)
    for kind, arg in history:
        before = state
        try:
            if kind == "contribute":
                state, _ = contribute(state, arg, "r")
                ledger += Fraction(arg * state.bet_value * state.increment_bp, 10_000)
                reserve += Fraction(arg * state.bet_value * state.reserve_bp, 10_000)
            elif kind == "correct":
                state, _ = correct(state, arg, "sup", "test")
                ledger = Fraction(arg)
            elif kind == "hit":
                winners = list({seat: combo for seat, combo in arg}.items())
                state, _ = freeze(state, allocate(state, winners), "r")
            elif kind in ("pay", "reject"):
                if not state.pending:
                    continue
                hit = sorted(state.pending, key=lambda h: (h.top, h.amount))[0 if kind == "pay" else -1]
                if kind == "pay":
                    state, recs = pay(state, hit.hit_id, "sup")
                    ledger -= hit.amount
                else:
                    state, recs = reject(state, hit.hit_id, "sup", "test")
                if any(r.kind == "reset" for r in recs):
                    ledger += state.seed + reserve
                    reserve = Fraction(0)
            elif kind == "reconfigure":
                b, i = arg
                new_cfg = cfg(bet_value=b, increment_bp=i, reserve_bp=min(res, 10_000 - i), seed=10_000 * b)
                state, _ = reconfigure(state, new_cfg, between_rounds=True)
        except JackpotError:
            assert state == before  # a refused operation changes nothing
            continue
        state.check_invariants()
        assert Fraction(state.meter_units, UNIT) == ledger
        assert Fraction(state.reserve_units, UNIT) == reserve
        assert state.meter_units >= 0
        if kind not in ("pay", "correct"):
            assert state.meter_units >= before.meter_units
    assert MeterState.from_dict(state.to_dict()) == state


def test_to_dict_is_what_asdict_made_and_a_copy() -> None:
    """to_dict (in every input's rollback copy) gives exactly the dict ``dataclasses.asdict`` gave, pending hits
    and ``extra`` included, and shares no mutable part with the state."""
    from dataclasses import asdict, replace

    state = MeterState.initial(cfg(increment_bp=5000, reserve_bp=1000))
    state, _ = contribute(state, 7, "r1")
    awards = allocate(state, [(3, Combination.TWO_ACES_MIXED), (5, Combination.FOUR_ACES_ONE_COLOUR)])
    state, _ = freeze(state, awards, "r2")
    state = replace(state, extra={"note": {"kept": [1, 2]}})
    d = state.to_dict()
    assert d == {**asdict(state), "pending": [asdict(p) for p in state.pending]}
    assert list(d) == list(asdict(state)) and len(d["pending"]) == 2
    d["extra"]["note"]["kept"].append(3)
    assert state.extra == {"note": {"kept": [1, 2]}}
    assert MeterState.from_dict(state.to_dict()) == state
