"""Jackpot combinations (PT-2001 r.42, r.43) and sharing between several winners (PT-2001 r.50)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.jackpot import JackpotError
from controller.jackpot.config import JackpotConfig
from controller.jackpot.hits import Combination, allocate, decided, evaluate
from controller.jackpot.meter import UNIT, MeterState

C = Combination


def meter(amount: int, bet: int = 100) -> MeterState:
    cfg = JackpotConfig.from_dict(
        {
            "enabled": True,
            "mode": "automatic",
            "bet_value": bet,
            "increment_bp": 5000,
            "reserve_bp": 0,
            "seed": 10_000 * bet,
            "currency": "EUR",
        }
    )
    s = MeterState.initial(cfg)
    # a meter showing `amount` (plus a sub-cent remainder that must never be paid out)
    return MeterState.from_dict(
        {
            **s.to_dict(),
            "meter_units": amount * UNIT + 4321,
            "corrections_units": amount * UNIT + 4321 - s.meter_units,
        }
    )


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        (["AH", "AD", "AH", "AD"], C.FOUR_ACES_ONE_COLOUR),  # r.43a four red aces
        (["AS", "AC", "AC", "AS"], C.FOUR_ACES_ONE_COLOUR),  # r.43a four black aces
        (["AH", "AH", "AH", "AH"], C.FOUR_ACES_ONE_COLOUR),  # 6 decks: same card four times is red
        (["AH", "AD", "AH", "AS"], C.THREE_ACES_MIXED),  # four aces, mixed colours: first three count
        (["AS", "AS", "AS", "AH"], C.THREE_ACES_SUITED),  # r.43b
        (["AS", "AS", "AS"], C.THREE_ACES_SUITED),
        (["AS", "AS", "AS", "7D"], C.THREE_ACES_SUITED),
        (["AH", "AH", "AD", "KC"], C.THREE_ACES_MIXED),  # r.43c: not all of one suit
        (["AC", "AD", "AH"], C.THREE_ACES_MIXED),
        (["AD", "AD"], C.TWO_ACES_SUITED),  # r.43d
        (["AD", "AD", "9C", "AD"], C.TWO_ACES_SUITED),  # a non-ace breaks the run
        (["AD", "AC"], C.TWO_ACES_MIXED),  # r.43e
        (["AD", "AH", "5S"], C.TWO_ACES_MIXED),  # red but different suits: mixed
        (["AD", "KD"], None),
        (["KD", "AD", "AD", "AD"], None),  # the aces must be the first cards (r.42)
        (["AD"], None),
        ([], None),
    ],
)
def test_each_combination_pt2001_r43(cards: list[str], expected: Combination | None) -> None:
    assert evaluate(cards) is expected


def test_split_hands_count_in_deal_order_pt2001_r42() -> None:
    """Seat dealt AH AD, splits; hand 1 gets AH, hand 2 gets AD: first four cards AH AD AH AD = top."""
    hand1, hand2 = ["AH", "AH"], ["AD", "AD"]
    dealt = [hand1[0], hand2[0], hand1[1], hand2[1]]  # chronological order across the split hands
    assert evaluate(dealt) is C.FOUR_ACES_ONE_COLOUR
    # the fifth card (a re-split or draw) never counts
    assert evaluate(["AH", "AD", "AH", "7C", "AD"]) is C.THREE_ACES_MIXED


def test_decided_once_four_cards_or_a_non_ace() -> None:
    assert not decided(["AH", "AH", "AH"])
    assert decided(["AH", "AH", "AH", "AS"]) and decided(["AH", "9H"])


@pytest.mark.parametrize("bad", ["ah", "1H", "AX", "A", 5, "10H"])
def test_bad_card_named(bad: object) -> None:
    with pytest.raises(JackpotError, match="card"):
        evaluate(["AH", bad])  # type: ignore[list-item]
    with pytest.raises(JackpotError, match="cards: expected a list"):
        evaluate("AHAD")


def test_fixed_prizes_are_multiples_of_the_bet_pt2001_r43() -> None:
    m = meter(5_000_000)
    got = {c: allocate(m, [(1, c)])[0].amount for c in C if not c.is_top}
    assert got == {
        C.TWO_ACES_MIXED: 2_500,
        C.TWO_ACES_SUITED: 10_000,
        C.THREE_ACES_MIXED: 25_000,
        C.THREE_ACES_SUITED: 250_000,
    }
    assert allocate(m, [(4, C.FOUR_ACES_ONE_COLOUR)])[0].amount == 5_000_000  # 100 % (sub-cent stays)


def test_several_winners_smallest_first_remainder_to_top_pt2001_r50a() -> None:
    m = meter(1_000_000)
    awards = allocate(
        m,
        [(6, C.FOUR_ACES_ONE_COLOUR), (2, C.THREE_ACES_SUITED), (7, C.TWO_ACES_MIXED), (1, C.TWO_ACES_MIXED)],
    )
    assert [(a.seat, a.combination, a.amount) for a in awards] == [
        (1, C.TWO_ACES_MIXED, 2_500),
        (7, C.TWO_ACES_MIXED, 2_500),
        (2, C.THREE_ACES_SUITED, 250_000),
        (6, C.FOUR_ACES_ONE_COLOUR, 1_000_000 - 255_000),
    ]
    assert sum(a.amount for a in awards) == m.display_value


def test_tied_top_winners_share_odd_cent_to_lowest_seat_pt2001_r50b() -> None:
    m = meter(1_000_001)
    awards = allocate(
        m,
        [
            (5, C.FOUR_ACES_ONE_COLOUR),
            (2, C.FOUR_ACES_ONE_COLOUR),
            (4, C.FOUR_ACES_ONE_COLOUR),
            (3, C.TWO_ACES_SUITED),
        ],
    )
    assert [(a.seat, a.amount) for a in awards] == [(3, 10_000), (2, 330_001), (4, 330_000), (5, 330_000)]
    assert sum(a.amount for a in awards) == 1_000_001


def test_without_top_winner_the_remainder_stays_on_the_meter() -> None:
    awards = allocate(meter(1_000_000), [(1, C.THREE_ACES_MIXED)])
    assert [a.amount for a in awards] == [25_000]


def test_prizes_capped_when_meter_cannot_cover_them() -> None:
    """Beyond the book: a group of equal prizes the meter cannot cover shares what is left, flagged."""
    awards = allocate(
        meter(1_000_000),
        [
            (1, C.THREE_ACES_SUITED),
            (2, C.THREE_ACES_SUITED),
            (3, C.THREE_ACES_SUITED),
            (4, C.THREE_ACES_SUITED),
            (5, C.THREE_ACES_SUITED),
        ],
    )
    assert [a.amount for a in awards] == [200_000] * 5 and all(a.capped for a in awards)


def test_allocate_refuses_bad_winners() -> None:
    with pytest.raises(JackpotError, match="seat appears twice"):
        allocate(meter(1_000_000), [(1, C.TWO_ACES_MIXED), (1, C.TWO_ACES_SUITED)])
    with pytest.raises(JackpotError, match="not a seat"):
        allocate(meter(1_000_000), [(0, C.TWO_ACES_MIXED)])


cards = st.lists(st.sampled_from([r + s for r in "A23456789TJQK" for s in "SHDC"]), max_size=8)


@given(cards)
def test_evaluate_depends_only_on_first_four_and_is_consistent(hand: list[str]) -> None:
    """Property (r.42): only the first four cards count; a combination implies its leading aces."""
    combo = evaluate(hand)
    assert combo is evaluate(hand[:4])
    if combo is not None:
        n = {
            C.TWO_ACES_MIXED: 2,
            C.TWO_ACES_SUITED: 2,
            C.THREE_ACES_MIXED: 3,
            C.THREE_ACES_SUITED: 3,
            C.FOUR_ACES_ONE_COLOUR: 4,
        }[combo]
        assert all(c[0] == "A" for c in hand[:n])


@given(
    st.lists(st.tuples(st.integers(1, 7), st.sampled_from(list(C))), max_size=7, unique_by=lambda w: w[0]),
    st.integers(0, 3_000_000),
)
def test_allocation_never_exceeds_meter_and_pays_all_with_a_top(winners: list, amount: int) -> None:
    """Property (r.50): awards sum to at most the displayed meter, exactly the meter when a top wins, in
    non-decreasing combination order."""
    m = meter(amount)
    awards = allocate(m, winners)
    total = sum(a.amount for a in awards)
    assert total <= m.display_value
    if any(c.is_top for _, c in winners):
        assert total == m.display_value
    assert [a.combination for a in awards] == sorted(a.combination for a in awards)
    assert sorted(a.seat for a in awards) == sorted(s for s, _ in winners)
