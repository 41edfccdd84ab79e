"""Playing cards: rank, suit, colour and blackjack point value (PT-2001 r.6)."""

from __future__ import annotations

from dataclasses import dataclass

# re-exported: the rules name the card alphabet from here (drivers/cards.py defines it once)
from controller.rules.errors import RulesError
from drivers.cards import RANKS as RANKS
from drivers.cards import RED_SUITS as RED_SUITS
from drivers.cards import SUITS as SUITS

TEN_VALUE = frozenset("TJQK")


class CardError(RulesError, ValueError):
    """A card code that is not rank + suit (e.g. "AS", "TD", "10H")."""


@dataclass(frozen=True, slots=True)
class Card:
    rank: str  # one of RANKS
    suit: str  # one of SUITS

    def __post_init__(self) -> None:
        if self.rank not in RANKS or len(self.rank) != 1:
            raise CardError(f"bad rank {self.rank!r} (expected one of {RANKS})")
        if self.suit not in SUITS or len(self.suit) != 1:
            raise CardError(f"bad suit {self.suit!r} (expected one of {SUITS})")

    @classmethod
    def parse(cls, code: str) -> Card:
        """Parse "AS", "td", "10H" (rank then suit)."""
        if not isinstance(code, str):
            raise CardError(f"card must be a string like 'AS', got {code!r}")
        text = code.strip().upper()
        if text.startswith("10"):
            text = "T" + text[2:]
        if len(text) != 2:
            raise CardError(f"bad card {code!r}: expected rank+suit like 'AS' or 'TD'")
        return cls(text[0], text[1])

    @property
    def colour(self) -> str:
        return "red" if self.suit in RED_SUITS else "black"

    @property
    def value(self) -> int:
        """Point value with the ace as 1; figures count 10 (PT-2001 r.6)."""
        if self.rank == "A":
            return 1
        if self.rank in TEN_VALUE:
            return 10
        return int(self.rank)

    @property
    def is_ace(self) -> bool:
        return self.rank == "A"

    @property
    def is_ten_value(self) -> bool:
        return self.rank in TEN_VALUE

    def __str__(self) -> str:
        return self.rank + self.suit


def full_deck() -> list[Card]:
    return [Card(r, s) for s in SUITS for r in RANKS]
