"""The linked progressive's meter (floor/progressive/meter.py), pure: exact to 1/10,000 of a minor unit, limit and
overflow, hits frozen at the meter of their moment (PT-2001 r.43, r.50), reseed (PT-2001 r.44), rejected hits given
back; and a property test against a ledger the test keeps itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.jackpot.hits import Combination
from controller.jackpot.meter import UNIT
from floor.progressive import meter as mt
from floor.progressive.config import BROKER_KEYS, SERVICE_KEYS
from floor.progressive.params import LinkParams, ParamsError

ROOT = Path(__file__).resolve().parents[1]
TOP = Combination.FOUR_ACES_ONE_COLOUR


def params(**kw: object) -> LinkParams:
    d = {
        "link": "bank-a",
        "site": "S1",
        "currency": "EUR",
        "bet_value": 100,
        "increment_bp": 1500,
        "reserve_bp": 500,
        "base_minor": 10_000,
        "limit_minor": 50_000,
        "members": ["T1", "T2"],
    } | kw
    return LinkParams.from_dict(d)


def test_a_contribution_is_exact_to_the_ten_thousandth_of_a_minor_unit() -> None:
    p = params(bet_value=1, increment_bp=1, reserve_bp=3)
    m = mt.Meter.initial(p)
    for _ in range(9_999):
        m, shares = mt.contribute(m, p, 1)
        assert shares == mt.Shares(1, 3, 0)
    assert (
        m.meter_units == 10_000 * UNIT + 9_999 and m.meter_minor == 10_000
    )  # the remainder carried, not shown
    m, _ = mt.contribute(m, p, 1)
    assert m.meter_minor == 10_001 and m.reserve_units == 30_000
    m.check()


def test_above_the_limit_the_increment_goes_to_the_overflow() -> None:
    p = params(base_minor=100, limit_minor=110, bet_value=100, increment_bp=1000, reserve_bp=0)
    m = mt.Meter.initial(p)
    m, s = mt.contribute(m, p, 100)  # 10 minor units to the meter: exactly the limit
    assert s == mt.Shares(10 * UNIT, 0, 0) and m.meter_minor == 110
    m, s = mt.contribute(m, p, 100)
    assert s == mt.Shares(0, 0, 10 * UNIT) and m.meter_minor == 110 and m.overflow_units == 10 * UNIT
    m.check()


def test_a_top_hit_takes_the_meter_and_reseeds_at_once_overflow_first_then_reserve_up_to_the_limit() -> None:
    """PT-2001 r.43a (100 % of the meter), r.44 (reseeded): base, then overflow, then reserve, within the limit."""
    p = params(base_minor=100, limit_minor=200, bet_value=100, increment_bp=1000, reserve_bp=1000)
    m = mt.Meter.initial(p)
    for _ in range(
        15
    ):  # 150 minor to the meter (100 above the limit's room go to overflow), 150 to the reserve
        m, _ = mt.contribute(m, p, 100)
    assert (m.meter_minor, m.overflow_units // UNIT, m.reserve_units // UNIT) == (200, 50, 150)
    m, won, reseed = mt.hit(m, p, [(3, TOP)])
    assert [(w.seat, w.amount_minor) for w in won] == [(3, 200)]
    assert reseed == mt.Reseed(base=100 * UNIT, from_overflow=50 * UNIT, from_reserve=50 * UNIT)
    assert (m.meter_minor, m.overflow_units, m.reserve_units // UNIT) == (200, 0, 100)
    m.check()


def test_two_hits_are_each_frozen_at_the_meter_of_their_moment() -> None:
    p = params(base_minor=1000, limit_minor=100_000, reserve_bp=0)
    m = mt.Meter.initial(p)
    m, _ = mt.contribute(m, p, 10_000)  # +1500
    m, first, _ = mt.hit(m, p, [(1, TOP)])
    m, second, _ = mt.hit(m, p, [(2, TOP)])
    assert (
        first[0].amount_minor == 2500 and second[0].amount_minor == 1000
    )  # the second wins the reseeded base


def test_a_rounds_fixed_prizes_are_paid_first_and_the_top_shares_what_remains() -> None:
    """PT-2001 r.50a: smaller prizes first, the top combination the remainder; r.43e: 25 x the jackpot bet."""
    p = params(base_minor=10_000, bet_value=100)
    m = mt.Meter.initial(p)
    _, won, _ = mt.hit(m, p, [(5, TOP), (2, Combination.TWO_ACES_MIXED)])
    assert [(w.seat, w.combination, w.amount_minor) for w in won] == [
        (2, Combination.TWO_ACES_MIXED, 2_500),
        (5, TOP, 7_500),
    ]


def test_a_top_share_below_all_leaves_the_rest_on_the_meter() -> None:
    p = params(base_minor=1000, top_share_bp=6000, reserve_bp=0)
    m, won, _ = mt.hit(mt.Meter.initial(p), p, [(1, TOP)])
    assert won[0].amount_minor == 600 and m.meter_minor == 400 + 1000  # 40 % stays, then the base again


def test_a_fixed_prize_below_the_base_is_topped_up_from_overflow_then_reserve() -> None:
    p = params(base_minor=3000, limit_minor=3000, bet_value=100, increment_bp=1000, reserve_bp=1000)
    m = mt.Meter.initial(p)
    m, _ = mt.contribute(m, p, 10_000)  # 1000 to overflow (at the limit), 1000 to the reserve
    m, won, reseed = mt.hit(m, p, [(1, Combination.TWO_ACES_MIXED)])  # 2500 off
    assert won[0].amount_minor == 2500 and reseed == mt.Reseed(0, 1000 * UNIT, 1000 * UNIT)
    assert m.meter_minor == 2500 and m.overflow_units == 0 and m.reserve_units == 0
    m.check()


def test_a_rejected_hit_gives_its_frozen_amount_back() -> None:
    p = params(reserve_bp=0)
    m = mt.Meter.initial(p)
    m, won, _ = mt.hit(m, p, [(1, Combination.TWO_ACES_SUITED)])
    m = mt.reject(m, won[0].amount_minor)
    assert m.meter_minor == p.base_minor and m.returned_units == m.prizes_units
    m.check()


def test_parameters_are_checked() -> None:
    with pytest.raises(ParamsError, match="link"):
        params(link="Bank A")
    with pytest.raises(ParamsError, match="more than the whole"):
        params(increment_bp=9000, reserve_bp=2000)
    with pytest.raises(ParamsError, match="limit_minor"):
        params(limit_minor=10, base_minor=20)
    with pytest.raises(ParamsError, match="members"):
        params(members=["T1", "T1"])
    with pytest.raises(ParamsError, match="unknown"):
        params(extra=1)


def test_docs_name_every_config_key() -> None:
    doc = (ROOT / "docs" / "progressive.md").read_text()
    for k in (*SERVICE_KEYS, *BROKER_KEYS):
        assert re.search(rf"`{k.name}`", doc), k.name
    for name in LinkParams.__slots__:
        assert f"`{name}`" in doc, name


# ---- the property: the meter against the test's own ledger ----
COMBOS = st.sampled_from(list(Combination))
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("contribute"), st.integers(0, 50_000)),
        st.tuples(
            st.just("hit"),
            st.lists(st.tuples(st.integers(1, 7), COMBOS), min_size=1, max_size=3, unique_by=lambda w: w[0]),
        ),
        st.tuples(st.just("reject"), st.integers(0, 10)),
        st.tuples(st.just("correct"), st.integers(0, 200_000)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(
    ops=OPS,
    inc=st.integers(0, 5000),
    res=st.integers(0, 5000),
    base=st.integers(1, 20_000),
    room=st.integers(0, 100_000),
    share=st.integers(1, 10_000),
)
def test_the_meter_always_equals_the_ledger_the_test_keeps(ops, inc, res, base, room, share) -> None:
    """base + contributions to the meter + reserve and overflow moved - prizes + returned + corrections == meter,
    after every operation; and nothing is created or lost: meter + reserve + overflow == seeds + every contribution's
    shares - prizes + returned + corrections, each counted by the test from what it did."""
    p = params(increment_bp=inc, reserve_bp=res, base_minor=base, limit_minor=base + room, top_share_bp=share)
    m = mt.Meter.initial(p)
    seeds, shares_in, prizes, returned, corrections = base * UNIT, 0, 0, 0, 0
    frozen: list[int] = []
    for op, arg in ops:
        before = m
        if op == "contribute":
            m, s = mt.contribute(m, p, arg)
            shares_in += arg * (inc + res)
            assert s.to_meter + s.to_overflow == arg * inc and s.to_reserve == arg * res
            assert m.meter_units <= max(before.meter_units, p.limit_minor * UNIT)
        elif op == "hit":
            m, won, reseed = mt.hit(m, p, arg)
            prizes += sum(w.amount_minor for w in won) * UNIT
            frozen += [w.amount_minor for w in won]
            assert sum(w.amount_minor for w in won) <= before.meter_minor  # never more than the meter shows
            if any(w.combination.is_top for w in won):
                seeds += base * UNIT
                assert reseed is not None and reseed.base == base * UNIT
        elif op == "reject" and frozen:
            amount = frozen.pop(arg % len(frozen))
            m = mt.reject(m, amount)
            returned += amount * UNIT
        elif op == "correct":
            m, delta = mt.correct(m, arg)
            corrections += delta
            assert m.meter_minor == arg
        m.check()
        assert m.meter_units + m.reserve_units + m.overflow_units == (
            seeds + shares_in - prizes + returned + corrections
        )
        assert (
            m.prizes_units == prizes and m.returned_units == returned and m.corrections_units == corrections
        )


def test_the_link_page_shows_hostile_text_as_text() -> None:
    """A round id a table sent (printable, bounded, still hostile) is escaped on the dashboard's link page."""
    from datetime import UTC, datetime

    from floor.progressive import ledger
    from floor.progressive.journal import GENESIS, Head
    from floor.progressive.page import link_page
    from floor.progressive.report import LinkReport, TableRow

    p = params()
    now = datetime.now(UTC)
    link = ledger.Link(LINK := "bank-a", "S1", 1, p, ledger.LinkStatus.RUNNING, mt.Meter.initial(p), 2, 7,
                       Head(0, GENESIS), now)  # fmt: skip
    evil = "<script>alert(1)</script>"
    hit = ledger.Hit(1, 1, "T1", evil, 2, "FOUR_ACES_ONE_COLOUR", 12345, ledger.HitStatus.PENDING, now)
    page = link_page(LinkReport(link, {"pending": 1}, [hit], [TableRow("T1", 3, 4, 400, 49_360)], [], []))
    assert evil not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and LINK in page
    assert "<script" not in page.lower()
