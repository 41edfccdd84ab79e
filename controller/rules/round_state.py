"""The state of one round's seats and hands, shared by the round engine (engine.py, which changes it) and
settlement (settlement.py, which reads it): the lower module both import, so neither imports the other back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from controller.rules.cards import Card
from controller.rules.hands import HandValue, hand_value, is_blackjack
from controller.rules.profiles import Profile
from controller.rules.types import DealerError, SeatBet

OPEN, STOOD, BUST, SURRENDERED, BLACKJACK, EVEN_MONEY, FIVE_CARD = (
    "open", "stood", "bust", "surrendered", "blackjack", "even_money", "five_card",
)  # fmt: skip


@dataclass
class HandState:
    seat: int
    base_bet: int  # the seat's original bet (each split hand carries the same, PT-2001 r.26)
    stake: int  # base_bet, doubled after a double
    cards: list[Card] = field(default_factory=list)
    from_split: bool = False
    split_aces: bool = False
    doubled: bool = False
    fixed_aces: int = 0  # PT-2001 r.32: a soft double keeps that ace at 1
    status: str = OPEN
    needs_card: bool = False  # a card is owed: second card of a split hand, the double card

    @property
    def value(self) -> HandValue:
        return hand_value(self.cards, fixed_aces=self.fixed_aces)

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.cards, from_split=self.from_split)


@dataclass
class CoBet:
    """Another player's bet on a seat whose titular decides the play (PT-2001 r.15-16, MO-2004 art.20)."""

    bet: SeatBet
    follows_split: bool = False  # PT-2001 r.28: an equal bet joined to the titular's second hand
    doubled: set[int] = field(default_factory=set)  # PT-2001 r.30: hands on which this bettor doubled too
    insurance: int = 0  # PT-2001 r.15: "são livres de o fazer, ou não"


@dataclass
class SeatState:
    bet: SeatBet
    hands: list[HandState]
    co_bets: list[CoBet] = field(default_factory=list)
    dealt: list[Card] = field(default_factory=list)  # every card this seat received, in order (PT-2001 r.42)
    insurance: int = 0
    insurance_decided: bool = False
    pairs_formed: int = 0  # MO-2004 art.13.1: initial pair, then each new pair after a split
    declined: set[int | str] = field(default_factory=set)  # MO-2004 art.16.5: pair values not split
    first_pair_split: bool = False  # MO-2004 art.13.2.2

    def jackpot_cards(self, order: str) -> list[Card]:
        """The seat's cards as PT-2001 r.42 counts them ("incluindo as correspondentes a pares divididos"), as the
        profile orders split hands (`jackpot.split_cards`): "deal_order", as they came out of the shoe, or
        "hand_order", hand by hand left to right (each split hand's cards together)."""
        if order == "hand_order":
            return [c for h in self.hands for c in h.cards]
        return list(self.dealt)


class SettlingRound(Protocol):
    """What settlement reads of a complete round (``RoundEngine``)."""

    profile: Profile
    seats: dict[int, SeatState]
    dealer: list[Card]

    @property
    def dealer_errors(self) -> list[DealerError]: ...

    def dealer_blackjack(self) -> bool: ...
