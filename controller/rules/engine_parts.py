"""The round engine's state and the steps its parts call on each other, declared once with their types.

`RoundEngine` (engine.py) is made of four parts: the bets (engine_bets.py), the rules for decisions
(engine_rules.py), the decisions (engine_decisions.py) and the cards (engine_cards.py). Each part reads and changes
the round's state set in `RoundEngine.__init__` and calls steps another part defines; each extends `EngineParts`,
so the type checker knows every field's type and every shared step's signature. At run time this class holds
annotations only: no field, no method, nothing in the lookup of any attribute. Pure logic, no I/O."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, NotRequired, TypedDict

from controller.rules.cards import Card
from controller.rules.profiles import Profile
from controller.rules.round_state import HandState, SeatState
from controller.rules.types import DealerError, RecipientJson, RoundPhase

if TYPE_CHECKING:
    from controller.rules.types import Action, Recipient, RuleViolation


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


class EngineParts:
    """The round's state and the steps the parts of `RoundEngine` share (set and defined in engine.py and the
    parts)."""

    profile: Profile
    first_of_game: bool
    seats: dict[int, SeatState]
    dealer: list[Card]
    phase: RoundPhase
    _plan_pos: int
    _burns: int
    _held: list[Card]
    _additional_dealt: bool
    _ended_by: str
    _seen: Counter[Card]
    _cards_in: list[CardEntry]
    _decisions: list[DecisionEntry]
    _errors: list[DealerError]
    _held_log: list[HeldEntry]
    _why: list[str]
    _card_count: int
    _dealt_count: int
    _late_second: bool
    _burnt_late: bool
    _in_card: bool

    if TYPE_CHECKING:
        # engine.py
        @property
        def up_card(self) -> Card | None: ...
        def expected_recipient(self) -> Recipient | None: ...
        def _current(self) -> HandState | None: ...
        def _hand_ref(self, h: HandState) -> Recipient: ...
        def _insurance_queue(self) -> list[int]: ...
        def _advance(self) -> None: ...

        # engine_bets.py
        def _over_round_limit(self, seat: int, extra: int) -> RuleViolation | None: ...
        def _over_seat_total(self, seat: int, extra: int) -> RuleViolation | None: ...

        # engine_rules.py
        def _why_not(self, h: HandState, action: Action) -> RuleViolation | None: ...
        def _why_not_surrender(self, h: HandState) -> RuleViolation | None: ...
        def _why_not_insurance(
            self, seat: int, action: Action, amount: int | None
        ) -> RuleViolation | None: ...
        def _default_insurance(self, seat: int) -> int: ...
        def _note_decline(self, h: HandState) -> None: ...
        def _never_offered(self, action: Action) -> RuleViolation | None: ...
        def _even_money_offered(self) -> bool: ...

        # engine_decisions.py
        def _record(self, decision: DecisionEntry) -> None: ...
        def _close_insurance(self) -> None: ...

        # engine_cards.py
        def _deliver_held(self, to: Recipient) -> None: ...
