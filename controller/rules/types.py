"""Shared vocabulary of the rules engine: actions, phases, recipients, errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from controller.actions import NO_INSURANCE as NO_INSURANCE_NAME
from controller.rules.cards import Card
from controller.rules.errors import RulesError

# A recipient in a round file (docs/rounds.md): "burn", "dealer", "held" or {"seat": N, "hand": N}.
RecipientJson: TypeAlias = str | dict[str, int | None]


class Action(StrEnum):
    HIT = "hit"
    STAND = "stand"
    DOUBLE = "double"
    SPLIT = "split"
    SURRENDER = "surrender"
    INSURANCE = "insurance"
    EVEN_MONEY = "even_money"
    NO_INSURANCE = NO_INSURANCE_NAME  # declines insurance / even money (its name: controller/actions.py)
    FIVE_CARD = "five_card"  # MO-2004 art.19: take half the bet as a win with five cards


INSURANCE_ACTIONS = frozenset({Action.INSURANCE, Action.EVEN_MONEY, Action.NO_INSURANCE})


class RoundPhase(StrEnum):
    INITIAL_DEAL = "initial_deal"
    INSURANCE = "insurance"  # insurance / even-money decisions right after the initial deal
    PLAYERS = "players"
    DEALER = "dealer"
    COMPLETE = "complete"


@dataclass(frozen=True, slots=True)
class Recipient:
    """Where a card goes: "burn" (discard), "dealer", "seat" (with hand index) or "held" (PT-2001 r.18)."""

    kind: str
    seat: int | None = None
    hand: int | None = None

    @classmethod
    def burn(cls) -> Recipient:
        return cls("burn")

    @classmethod
    def dealer(cls) -> Recipient:
        return cls("dealer")

    @classmethod
    def player(cls, seat: int, hand: int = 0) -> Recipient:
        return cls("seat", seat, hand)

    def to_json(self) -> RecipientJson:
        if self.kind == "seat":
            return {"seat": self.seat, "hand": self.hand}
        return self.kind

    @classmethod
    def from_json(cls, value: object) -> Recipient:
        if value in ("burn", "dealer"):
            return cls(value)
        if isinstance(value, Mapping) and isinstance(value.get("seat"), int):
            hand = value.get("hand", 0)
            if not isinstance(hand, int) or isinstance(hand, bool) or hand < 0:
                raise ValueError(f"bad hand index in {value!r}")
            return cls.player(value["seat"], hand)
        raise ValueError(f"bad recipient {value!r}: expected 'burn', 'dealer' or {{'seat': N, 'hand': N}}")

    @property
    def place(self) -> tuple[int, int]:
        """The seat and hand of a "seat" recipient (every one made by `player`)."""
        if self.seat is None or self.hand is None:
            raise ValueError(f"{self} is not a seat's hand")
        return self.seat, self.hand

    def __str__(self) -> str:
        return f"seat {self.seat} hand {self.hand}" if self.kind == "seat" else self.kind


@dataclass(frozen=True, slots=True)
class Turn:
    kind: str  # "player" | "insurance" | "dealer"
    seat: int | None = None
    hand: int | None = None


@dataclass(frozen=True, slots=True)
class DealerError:
    """A dealing error the rules name; the round stays valid (the card's fate is in CardOutcome)."""

    rule: str
    message: str
    card: Card | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"rule": self.rule, "message": self.message, "card": str(self.card) if self.card else None}


@dataclass(frozen=True, slots=True)
class CardOutcome:
    recipient: Recipient | None  # None: void, to the discard
    counts: bool  # False: the card does not count (burn or void)
    errors: list[DealerError] = field(default_factory=list)


@dataclass(frozen=True)
class SeatBet:
    seat: int
    amount: int  # minor units
    side_bets: Mapping[str, int] = field(default_factory=dict)
    jackpot_chip: bool = False
    player: str | None = None  # who placed it, when known (IT: one player's bets in a round are limited)
    # The seat whose hands this bet's any-pair side bet is on, when not its own (MO-2004 art.13.1 "de uma ou mais
    # mãos de qualquer jogador"; side_bets.any_pair.hands = "any_player").
    pair_bet_on: int | None = None


class RuleViolation(RulesError):
    """A player decision the profile forbids."""

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(f"{message} ({rule})")
        self.message = message
        self.rule = rule


class RoundError(RulesError, ValueError):
    """An impossible round: bad bets, impossible cards, a card after the round ended."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        super().__init__(f"{message} ({rule})" if rule else message)
        self.message = message
        self.rule = rule
