"""Exact return to player of the IT side bets by combinatorics (fractions, no simulation).

Perfect pairs (IT): the first two cards of a fresh pack of `decks` decks; pays 6x / 11x / 31x the stake,
stake included (mixed colour / same colour / same suit). Insurance (IT, PT-2001 r.33): half the bet, pays 2:1
(3x the stake returned) when the dealer's next card after an ace up is ten-valued; only the ace is removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from controller.rules.cards import Card

# IT pay table, total returned per unit staked (stake included).
PERFECT_PAIRS_PAYS = {"same_suit": 31, "same_colour": 11, "mixed_colour": 6}


def perfect_pairs_probabilities(decks: int) -> dict[str, Fraction]:
    """Probability of each perfect-pairs result on the first two cards of `decks` full decks."""
    if decks < 1:
        raise ValueError(f"decks must be >= 1, got {decks}")
    n = 52 * decks
    # Whatever the first card, the second is drawn from n-1 cards: decks-1 identical cards, `decks` of the
    # other suit of the same colour, 2*decks of the two suits of the other colour.
    return {
        "same_suit": Fraction(decks - 1, n - 1),
        "same_colour": Fraction(decks, n - 1),
        "mixed_colour": Fraction(2 * decks, n - 1),
    }


def perfect_pairs_rtp(decks: int, pays: dict[str, int] | None = None) -> Fraction:
    pays = pays or PERFECT_PAIRS_PAYS
    probs = perfect_pairs_probabilities(decks)
    return sum((probs[k] * pays[k] for k in probs), Fraction(0))


def insurance_rtp(
    decks: int, *, removed: Iterable[Card | str] = (), pays: Fraction = Fraction(2)
) -> Fraction:
    """RTP of insurance: P(ten-value hole card | dealer ace up, `removed` cards seen) x (1 + pays)."""
    if decks < 1:
        raise ValueError(f"decks must be >= 1, got {decks}")
    seen = [Card.parse(c) if isinstance(c, str) else c for c in removed]
    remaining = 52 * decks - 1 - len(seen)  # the dealer's ace is out
    tens = 16 * decks - sum(1 for c in seen if c.is_ten_value)
    if remaining <= 0 or tens < 0:
        raise ValueError("more cards removed than the pack holds")
    return Fraction(tens, remaining) * (1 + pays)


def as_percent(x: Fraction, places: int = 2) -> str:
    scaled = x * 100 * 10**places
    q, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r >= scaled.denominator:  # round half up
        q += 1
    s = str(q).rjust(places + 1, "0")
    return f"{s[:-places]}.{s[-places:]}"
