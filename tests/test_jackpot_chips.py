"""Jackpot chip collection (PT-2001 r.41, r.45, r.47, r.48), the edge debouncer and playability."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.jackpot import JackpotError
from controller.jackpot.availability import Availability, playable
from controller.jackpot.chips import ChipEvent, Debouncer, Refusal, RoundChips
from controller.jackpot.config import Mode

SEATS = frozenset(range(1, 8))


def auto_round(main_bets: set[int]) -> RoundChips:
    return RoundChips(Mode.AUTOMATIC, SEATS, frozenset(main_bets))


def test_automatic_collection_at_no_more_bets_pt2001_r41a() -> None:
    rnd = auto_round({1, 3, 5})
    for seat in (1, 3, 5):
        assert rnd.sensed(ChipEvent(seat, True, 100)) is None
    rnd.sensed(ChipEvent(5, False, 150))  # the player took the chip back before "no more bets"
    col = rnd.no_more_bets(200)
    assert col.seats == (1, 3) and col.count == 2 and col.refused == ()


def test_chip_after_no_more_bets_refused_and_flagged_pt2001_r48() -> None:
    rnd = auto_round({1, 2})
    rnd.sensed(ChipEvent(1, True, 100))
    col = rnd.no_more_bets(200)
    refusal = rnd.sensed(ChipEvent(2, True, 250))
    assert refusal is not None and refusal.reason is Refusal.LATE and refusal.seat == 2
    assert rnd.late == [refusal]
    assert col.seats == (1,)  # the late chip never joins the round
    assert rnd.sensed(ChipEvent(1, False, 300)) is None  # removing the collected chip is no bet


def test_chip_without_main_bet_refused_pt2001_r45() -> None:
    rnd = auto_round({1})
    rnd.sensed(ChipEvent(1, True, 10))
    rnd.sensed(ChipEvent(4, True, 20))
    col = rnd.no_more_bets(30)
    assert col.seats == (1,)
    assert [(r.seat, r.reason) for r in col.refused] == [(4, Refusal.NO_MAIN_BET)]


def test_one_chip_per_seat_however_the_sensor_toggles_pt2001_r47() -> None:
    rnd = auto_round({2})
    for t, present in enumerate([True, False, True, True]):
        rnd.sensed(ChipEvent(2, present, t))
    assert rnd.no_more_bets(10).seats == (2,)


def test_manual_mode_dealer_enters_seats_pt2001_r41b() -> None:
    rnd = RoundChips(Mode.MANUAL, SEATS, frozenset({1, 2, 6}))
    with pytest.raises(JackpotError, match="manual mode"):
        rnd.sensed(ChipEvent(1, True, 0))
    col = rnd.manual_collect([6, 1, 1, 3, 9])
    assert col.seats == (1, 6)
    assert [(r.seat, r.reason) for r in col.refused] == [
        (1, Refusal.DUPLICATE),
        (3, Refusal.NO_MAIN_BET),
        (9, Refusal.UNKNOWN_SEAT),
    ]
    with pytest.raises(JackpotError, match="already collected"):
        rnd.manual_collect([2])


def test_wrong_mode_and_unknown_seat() -> None:
    rnd = auto_round({1})
    with pytest.raises(JackpotError, match="automatic mode"):
        rnd.manual_collect([1])
    assert rnd.sensed(ChipEvent(12, True, 0)).reason is Refusal.UNKNOWN_SEAT  # type: ignore[union-attr]
    with pytest.raises(JackpotError, match="does not have"):
        RoundChips(Mode.AUTOMATIC, SEATS, frozenset({8}))


@given(
    st.sets(st.integers(1, 7)),
    st.lists(st.tuples(st.integers(1, 7), st.booleans()), max_size=30),
    st.lists(st.tuples(st.integers(1, 7), st.booleans()), max_size=10),
)
def test_collected_seats_property(main: set[int], before: list, after: list) -> None:
    """Property: collected = seats whose last pre-call state was present AND have a main bet (r.45, r.47);
    nothing sensed after the call changes it (r.48)."""
    rnd = auto_round(main)
    last: dict[int, bool] = {}
    for t, (seat, present) in enumerate(before):
        rnd.sensed(ChipEvent(seat, present, t))
        last[seat] = present
    col = rnd.no_more_bets(1000)
    for t, (seat, present) in enumerate(after):
        r = rnd.sensed(ChipEvent(seat, present, 2000 + t))
        assert (r is not None) == present
    assert set(col.seats) == {s for s, p in last.items() if p} & main
    assert len(col.seats) == len(set(col.seats))


def test_debouncer_with_fake_clock() -> None:
    d = Debouncer(settle_ms=20)
    assert d.feed(True, 0) is None  # edge seen, not settled
    assert d.feed(False, 5) is None  # bounce back: cancelled
    assert d.feed(True, 8) is None
    assert d.poll(27) is None  # 19 ms held
    assert d.poll(28) is True  # 20 ms held: stable
    assert d.level is True
    assert d.feed(True, 40) is None  # no change, no event
    assert d.feed(False, 50) is None and d.feed(False, 69) is None
    assert d.feed(False, 70) is False


def test_playable_needs_meter_and_display() -> None:
    assert playable(True, True)
    assert not playable(True, False) and not playable(False, True) and not playable(False, False)


def test_availability_reports_display_loss_and_return() -> None:
    changes: list[tuple[bool, str]] = []
    av = Availability(on_change=lambda ok, why: changes.append((ok, why)))
    assert not av.playable  # unknown display: not playable
    av.set_display(True)
    av.set_display(False)
    av.set_display(True)
    av.set_meter(False)
    assert changes == [
        (True, "ok"),
        (False, "jackpot display not connected"),
        (True, "ok"),
        (False, "jackpot hit pending verification"),
    ]
