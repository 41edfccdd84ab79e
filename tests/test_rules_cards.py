"""Cards and hand values (PT-2001 r.6, r.20)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.rules.cards import RANKS, SUITS, Card, CardError
from controller.rules.hands import dealer_must_draw, dealer_total, hand_value, is_blackjack

cards = st.builds(Card, st.sampled_from(RANKS), st.sampled_from(SUITS))


def C(*codes: str) -> list[Card]:
    return [Card.parse(c) for c in codes]


@pytest.mark.parametrize(
    ("code", "rank", "suit", "colour"),
    [("AS", "A", "S", "black"), ("10h", "T", "H", "red"), ("qd", "Q", "D", "red")],
)
def test_parse(code: str, rank: str, suit: str, colour: str) -> None:
    c = Card.parse(code)
    assert (c.rank, c.suit, c.colour) == (rank, suit, colour)


@pytest.mark.parametrize("bad", ["", "A", "1S", "AX", "ZS", "ASS", "11H", 5])
def test_parse_rejects_bad_codes_with_a_clear_error(bad: object) -> None:
    with pytest.raises(CardError):
        Card.parse(bad)  # type: ignore[arg-type]


def test_figures_count_ten_and_ace_one_or_eleven_pt2001_r6() -> None:
    assert hand_value(C("KS", "QH")).total == 20
    assert hand_value(C("AS", "6H")).total == 17 and hand_value(C("AS", "6H")).soft
    assert hand_value(C("AS", "6H", "TD")).total == 17 and not hand_value(C("AS", "6H", "TD")).soft
    assert hand_value(C("AS", "AH")).total == 12


def test_dealer_stands_on_soft_17_pt2001_r6_r19() -> None:
    assert dealer_total(C("AS", "6H")) == 17
    assert not dealer_must_draw(C("AS", "6H"))
    assert dealer_must_draw(C("AS", "5H"))  # soft 16 draws
    assert dealer_must_draw(C("TS", "6H"))
    assert not dealer_must_draw(C("AS", "AH", "5D"))  # soft 17 again


def test_soft_double_fixes_the_ace_pt2001_r32() -> None:
    assert hand_value(C("AS", "8H", "AD"), fixed_aces=1).total == 20  # second ace may still count 11
    assert hand_value(C("AS", "9H", "5D"), fixed_aces=1).total == 15
    assert hand_value(C("AS", "8H", "2D"), fixed_aces=1).total == 11  # would be 21 with the ace free


def test_blackjack_only_two_cards_never_after_split_pt2001_r20() -> None:
    assert is_blackjack(C("AS", "KH"))
    assert not is_blackjack(C("AS", "KH"), from_split=True)
    assert not is_blackjack(C("AS", "5H", "5D"))


@given(st.lists(cards, min_size=1, max_size=12))
def test_hand_value_properties(hand: list[Card]) -> None:
    hard = sum(c.value for c in hand)
    v = hand_value(hand)
    assert v.total in (hard, hard + 10)
    assert (v.total == hard + 10) == v.soft
    if v.soft:
        assert v.total <= 21 and any(c.is_ace for c in hand)
    elif any(c.is_ace for c in hand):
        assert hard + 10 > 21  # an ace is counted as 11 whenever that does not bust
    assert dealer_must_draw(hand) == (v.total <= 16)


@given(st.lists(cards, min_size=2, max_size=2))
def test_blackjack_iff_ace_and_ten(two: list[Card]) -> None:
    bj = is_blackjack(two)
    assert bj == (hand_value(two).total == 21)
    assert not is_blackjack(two, from_split=True)
