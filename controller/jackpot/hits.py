"""Jackpot combinations and the sharing of a round's prizes (PT-2001 r.42, r.43, r.50).

Which cards count (PT-2001 r.42: "as primeiras duas, três ou quatro cartas originariamente distribuídas
ao jogador, incluindo as correspondentes a pares divididos"): the first four cards *the seat received*, in the
order they were dealt, across all its split hands. Example: the seat is dealt AH, AD, splits; the first split
hand receives AH, the second AD: the first four cards are AH AD AH AD (four red aces, the top prize).
Without a split the third and fourth cards are the cards drawn on the hand. The caller passes that
chronological list;
``evaluate`` looks only at its first four cards.

Only aces count, so a combination needs its cards at the front: "the first three cards are aces" means cards
1-3. The hand gets its highest combination only. Suits "SHDC": red aces are AH and AD, black aces AS and AC,
of any deck (with 6 decks, AH AH AD AH is four red aces). "Aces of different suits" means "not all of one
suit" (AH AH AD is three aces of different suits, 250 x) by default; the profile's `jackpot.different_suits =
"all_different"` reads every suit different, and AH AH AD then takes its first two cards' prize (r.43d, 100 x).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from controller.jackpot import JackpotError
from drivers.cards import BLACK_SUITS, RANKS, RED_SUITS, SUITS


class Combination(IntEnum):
    """Ordered from the smallest prize to the largest (PT-2001 r.43 e..a)."""

    TWO_ACES_MIXED = 1  # r.43e: first two cards aces of different suits, 25 x
    TWO_ACES_SUITED = 2  # r.43d: first two cards aces of one suit, 100 x
    THREE_ACES_MIXED = 3  # r.43c: first three cards aces, not all of one suit, 250 x
    THREE_ACES_SUITED = 4  # r.43b: first three cards aces of one suit, 2,500 x
    FOUR_ACES_ONE_COLOUR = 5  # r.43a: first four cards all red or all black aces, 100 % of the meter

    @property
    def multiplier(self) -> int | None:
        """Times the jackpot bet; None for the top combination (the meter's remainder)."""
        return _MULTIPLIERS[self]

    @property
    def is_top(self) -> bool:
        return self is Combination.FOUR_ACES_ONE_COLOUR


_MULTIPLIERS: dict[Combination, int | None] = {
    Combination.TWO_ACES_MIXED: 25,
    Combination.TWO_ACES_SUITED: 100,
    Combination.THREE_ACES_MIXED: 250,
    Combination.THREE_ACES_SUITED: 2500,
    Combination.FOUR_ACES_ONE_COLOUR: None,
}


class Pot(Protocol):
    """What ``allocate`` reads of the meter (``meter.MeterState``, which builds on this module)."""

    @property
    def display_value(self) -> int: ...

    @property
    def bet_value(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Award:
    seat: int
    combination: Combination
    amount: int  # minor units
    capped: bool = False  # the meter could not cover the full fixed prize (see allocate)


def _check(card: object) -> str:
    if not isinstance(card, str) or len(card) != 2 or card[0] not in RANKS or card[1] not in SUITS:
        raise JackpotError(f"card {card!r}: expected rank {RANKS!r} + suit {SUITS!r}, e.g. 'AH'")
    return card


DIFFERENT_SUITS = ("not_all_one", "all_different")  # the readings of r.43c "ases de naipes diferentes"


def evaluate(cards: Sequence[str], different_suits: str = "not_all_one") -> Combination | None:
    """The jackpot combination of a seat's cards in deal order, split hands included (PT-2001 r.42, r.43).

    ``different_suits`` is the profile's reading of r.43c (``jackpot.different_suits``): "not_all_one", or
    "all_different" (three aces of three suits; AH AH AD then takes its first two cards' combination, r.43d)."""
    if different_suits not in DIFFERENT_SUITS:
        raise JackpotError(f"different_suits: expected one of {DIFFERENT_SUITS}, got {different_suits!r}")
    if isinstance(cards, str) or not isinstance(cards, Sequence):
        raise JackpotError(f"cards: expected a list of card codes, got {type(cards).__name__}")
    first = [_check(c) for c in cards[:4]]
    for c in cards[4:]:
        _check(c)
    aces = 0
    for c in first:
        if c[0] != "A":
            break
        aces += 1
    suits = [c[1] for c in first[:aces]]
    if aces == 4 and (set(suits) <= RED_SUITS or set(suits) <= BLACK_SUITS):
        return Combination.FOUR_ACES_ONE_COLOUR
    if aces >= 3:
        kinds = len(set(suits[:3]))
        if kinds == 1:
            return Combination.THREE_ACES_SUITED
        if kinds == 3 or different_suits == "not_all_one":
            return Combination.THREE_ACES_MIXED
    if aces >= 2:
        return Combination.TWO_ACES_SUITED if suits[0] == suits[1] else Combination.TWO_ACES_MIXED
    return None


def decided(cards: Sequence[str]) -> bool:
    """True once more cards cannot change ``evaluate`` (four cards seen, or a non-ace among the first)."""
    if isinstance(cards, str) or not isinstance(cards, Sequence):
        raise JackpotError(f"cards: expected a list of card codes, got {type(cards).__name__}")
    first = [_check(c) for c in cards[:4]]
    return len(first) >= 4 or any(c[0] != "A" for c in first)


def allocate(meter_state: Pot, winners: Sequence[tuple[int, Combination]]) -> list[Award]:
    """Share the meter between a round's winners (PT-2001 r.43, r.50); returns awards in payment order.

    Smaller prizes are paid first, smallest to largest (r.50a), each ``multiplier x bet_value``; the top
    combination takes what remains of the meter (r.43a), shared equally between tied top winners (r.50b).
    In whole minor units: the odd cents of a share go one each to the tied winners in seat order (lowest
    seat number first, PT-2001 r.2 numbering), so the whole displayed meter is paid; the sub-cent remainder
    stays on the meter. Beyond the rule book: if the meter cannot cover a group of equal fixed prizes, that
    group shares what is left in the same way and its awards are marked ``capped`` for the supervisor.
    """
    seats = [s for s, _ in winners]
    if len(set(seats)) != len(seats):
        raise JackpotError("allocate: a seat appears twice (one jackpot chip per seat, PT-2001 r.47)")
    for seat, combo in winners:
        if isinstance(seat, bool) or not isinstance(seat, int) or seat < 1:
            raise JackpotError(f"allocate: seat {seat!r} is not a seat number")
        if not isinstance(combo, Combination):
            raise JackpotError(f"allocate: seat {seat}: {combo!r} is not a Combination")
    available = meter_state.display_value
    awards: list[Award] = []
    for combo in sorted(Combination):
        group = sorted(s for s, c in winners if c is combo)
        if not group:
            continue
        if combo.is_top:
            shares = _split(available, len(group))
            awards += [Award(s, combo, a) for s, a in zip(group, shares, strict=True)]
            available = 0
            continue
        prize = (combo.multiplier or 0) * meter_state.bet_value
        if prize * len(group) <= available:
            awards += [Award(s, combo, prize) for s in group]
            available -= prize * len(group)
        else:
            shares = _split(available, len(group))
            awards += [Award(s, combo, a, capped=True) for s, a in zip(group, shares, strict=True)]
            available = 0
    return awards


def _split(amount: int, n: int) -> list[int]:
    base, odd = divmod(amount, n)
    return [base + (1 if i < odd else 0) for i in range(n)]
