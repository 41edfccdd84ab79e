"""Hand totals with soft/hard aces, blackjack and the dealer's drawing rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.rules.cards import Card


@dataclass(frozen=True, slots=True)
class HandValue:
    total: int  # best total not above 21 if one exists, else the hard total
    soft: bool  # an ace is counted as 11 in `total`

    @property
    def bust(self) -> bool:
        return self.total > 21


def hand_value(cards: Sequence[Card], *, fixed_aces: int = 0) -> HandValue:
    """Best total: one ace counts 11 when that does not pass 21.

    `fixed_aces` aces must stay at 1 (a soft double, PT-2001 r.32 / PT-ONLINE-2015 r.8a.ii).
    """
    hard, free_aces = 0, -fixed_aces
    for c in cards:  # one pass (the core asks for every hand's total on every input)
        hard += c.value
        if c.is_ace:
            free_aces += 1
    if free_aces > 0 and hard + 10 <= 21:
        return HandValue(hard + 10, True)
    return HandValue(hard, False)


def is_blackjack(cards: Sequence[Card], *, from_split: bool = False) -> bool:
    """Ace + ten-value as the first two cards; after a split it is just 21 (PT-2001 r.20, MO art.10.6)."""
    return (
        not from_split
        and len(cards) == 2
        and any(c.is_ace for c in cards)
        and any(c.is_ten_value for c in cards)
    )


def dealer_total(cards: Sequence[Card]) -> int:
    """The dealer's ace counts 11 whenever that gives 17-21 (PT-2001 r.6); same as the best total."""
    return hand_value(cards).total


def dealer_must_draw(cards: Sequence[Card]) -> bool:
    """Draw on 16 or less, never on 17 or more, soft 17 included (PT-2001 r.6, r.19; MO-2004 art.6.1)."""
    return dealer_total(cards) <= 16
