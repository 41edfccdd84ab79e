"""The entries of the round engine's logs, typed: the round file's cards and decisions, the held cards.

`RoundEngine` (engine.py) holds four parts, each made for the round and reading its state through it: the bets'
checks (engine_bets.py), the rules for decisions (engine_rules.py), the decisions (engine_decisions.py) and the
cards (engine_cards.py). Pure logic, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

from controller.rules.types import RecipientJson

if TYPE_CHECKING:
    pass


class CardEntry(TypedDict):
    """One card of the round file's "cards" (docs/rounds.md)."""

    card: str
    face_up: NotRequired[bool]
    to: NotRequired[RecipientJson]  # where the dealer put it, when given
    recipient: NotRequired[RecipientJson]  # where the rules sent it ("void": to the discard)


class DecisionEntry(TypedDict):
    """One decision of the round file's "decisions" (docs/rounds.md)."""

    action: str
    seat: NotRequired[int]
    hand: NotRequired[int | None]
    player: NotRequired[str]  # a co-bettor's own decision (PT-2001 r.15)
    amount: NotRequired[int]  # insurance stake
    implicit: NotRequired[bool]  # a card while the hand could hit: an implicit hit
    after_cards: NotRequired[int]  # shoe cards out before it (a replay interleaves cards and decisions)


class HeldEntry(TypedDict):
    """Where a held card (PT-2001 r.18) finally went."""

    card: str
    recipient: RecipientJson
