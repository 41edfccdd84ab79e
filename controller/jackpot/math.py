"""Exact jackpot probabilities and returns (PT-2001 r.42-44), by formula, no simulation.

Model: the seat's first four cards are a uniformly random ordered draw, without replacement, from a full shoe
of ``decks`` x 52 cards (cards dealt to other seats and the dealer are unseen, so by symmetry they do not
change these probabilities). A seat whose first cards are all aces is assumed to receive at least four cards
(aces are always split or hit), so the 3- and 4-card combinations are reachable. With ``N`` decks,
``D = 52N`` cards, ``A = 4N`` aces, ``N`` aces per suit, ``2N`` per colour, and ``(x)_k = x(x-1)...(x-k+1)``:

    P(first 2 aces)                = (A)_2 / (D)_2                        -> hit frequency per seat-round
    P(first 2 aces, one suit)      = 4 (N)_2 / (D)_2
    P(first 3 aces)                = (A)_3 / (D)_3
    P(first 3 aces, one suit)      = 4 (N)_3 / (D)_3
    P(top: 4 aces, one colour)     = 2 (2N)_4 / (D)_4
    P(3 one suit and top)          = 4 (N)_3 (2N-3) / (D)_4
    P(2 one suit and 3 aces)       = 4 (N)_2 (A-2) / (D)_3

and each hand takes its highest combination only:

    top = P(top)
    3S  = P(3 one suit) - P(3 one suit and top)
    3M  = P(3 aces) - P(3 one suit) - (P(top) - P(3 one suit and top))
    2S  = P(2 one suit) - P(2 one suit and 3 aces)
    2M  = P(2 aces) - P(2 one suit) - (P(3 aces) - P(2 one suit and 3 aces))

Return of one jackpot bet ``b`` when the meter shows ``M`` (one winner; several winners in one round are rare
enough to leave out): ``R(M) = 25 p2M + 100 p2S + 250 p3M + 2500 p3S + p_top M / b``. Long run: every unit put
on the meter and the reserve is paid back, and the house adds the seed once per top hit (one in ``1/p_top``
bets), so ``R_long = (increment_bp + reserve_bp) / 10000 + p_top x seed / b``. The fixed prizes are paid from
the meter (PT-2001 r.43a "após pagos os prémios menores"), so they are inside the increment, not on top of it;
the meter drifts down between top hits if ``increment_bp / 10000 < fixed EV``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from controller.jackpot.config import BP_DENOMINATOR
from controller.jackpot.hits import Combination, evaluate


def _ff(x: int, k: int) -> int:
    """Falling factorial (x)_k; 0 when x < k."""
    out = 1
    for i in range(k):
        out *= max(x - i, 0)
    return out


@dataclass(frozen=True, slots=True)
class Odds:
    decks: int
    probabilities: dict[Combination, Fraction]

    @property
    def hit_frequency(self) -> Fraction:
        """P(any combination) per seat-round with a jackpot bet: the first two cards are aces."""
        return sum(self.probabilities.values(), Fraction(0))

    @property
    def top(self) -> Fraction:
        return self.probabilities[Combination.FOUR_ACES_ONE_COLOUR]

    @property
    def fixed_ev(self) -> Fraction:
        """Expected fixed prizes per jackpot bet, in bets."""
        return sum(
            (p * (c.multiplier or 0) for c, p in self.probabilities.items() if not c.is_top), Fraction(0)
        )


def combination_odds(decks: int, different_suits: str = "not_all_one") -> Odds:
    """Exact probability of each combination (highest only) for a shoe of ``decks`` decks; r.43c's "naipes
    diferentes" as the profile reads it (``jackpot.different_suits``: the formulas above are "not_all_one";
    "all_different" is counted by ``enumerated_odds``)."""
    if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
        raise ValueError(f"decks must be a positive integer, got {decks!r}")
    if different_suits != "not_all_one":
        return enumerated_odds(decks, different_suits)
    n, d, a = decks, 52 * decks, 4 * decks
    d2, d3, d4 = Fraction(_ff(d, 2)), Fraction(_ff(d, 3)), Fraction(_ff(d, 4))
    p2 = _ff(a, 2) / d2
    p2s = 4 * _ff(n, 2) / d2
    p3 = _ff(a, 3) / d3
    p3s = 4 * _ff(n, 3) / d3
    ptop = 2 * _ff(2 * n, 4) / d4
    p3s_top = 4 * _ff(n, 3) * max(2 * n - 3, 0) / d4
    p2s_3 = 4 * _ff(n, 2) * (a - 2) / d3
    probs = {
        Combination.TWO_ACES_MIXED: p2 - p2s - (p3 - p2s_3),
        Combination.TWO_ACES_SUITED: p2s - p2s_3,
        Combination.THREE_ACES_MIXED: p3 - p3s - (ptop - p3s_top),
        Combination.THREE_ACES_SUITED: p3s - p3s_top,
        Combination.FOUR_ACES_ONE_COLOUR: ptop,
    }
    return Odds(decks, probs)


def enumerated_odds(decks: int, different_suits: str = "not_all_one") -> Odds:
    """The same probabilities counted exactly over every ordered first four cards (an ace of each suit, or any
    other card), each sequence's probability the product of its draws without replacement, judged by
    ``hits.evaluate``: the count for any reading of r.43 (and the check of the formulas)."""
    if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
        raise ValueError(f"decks must be a positive integer, got {decks!r}")
    probs = {c: Fraction(0) for c in Combination}
    symbols = ("AS", "AH", "AD", "AC", "2S")  # "2S": any card but an ace
    start = {"AS": decks, "AH": decks, "AD": decks, "AC": decks, "2S": 48 * decks}

    def walk(seq: list[str], left: dict[str, int], total: int, p: Fraction) -> None:
        if len(seq) == 4:
            combo = evaluate(seq, different_suits)
            if combo is not None:
                probs[combo] += p
            return
        for sym in symbols:
            if left[sym]:
                walk([*seq, sym], {**left, sym: left[sym] - 1}, total - 1, p * Fraction(left[sym], total))

    walk([], start, 52 * decks, Fraction(1))
    return Odds(decks, probs)


def return_at_meter(odds: Odds, bet_value: int, meter: int) -> Fraction:
    """Expected return of one jackpot bet (fraction of the bet) when the meter shows ``meter`` minor units."""
    if bet_value <= 0:
        raise ValueError("bet_value must be positive")
    return odds.fixed_ev + odds.top * Fraction(meter, bet_value)


def long_run_return(odds: Odds, bet_value: int, increment_bp: int, reserve_bp: int, seed: int) -> Fraction:
    """Long-run return of the jackpot bet: contributions paid back plus the house's seed per top hit."""
    if bet_value <= 0:
        raise ValueError("bet_value must be positive")
    return Fraction(increment_bp + reserve_bp, BP_DENOMINATOR) + odds.top * Fraction(seed, bet_value)


def break_even_meter(odds: Odds, bet_value: int) -> Fraction | None:
    """Meter value (minor units) at which one bet returns exactly 100 %; None if the top is impossible."""
    if odds.top == 0:
        return None
    return (1 - odds.fixed_ev) * bet_value / odds.top


def meter_drift_per_bet(odds: Odds, bet_value: int, increment_bp: int) -> Fraction:
    """Expected change of the meter per jackpot bet between top hits (minor units)."""
    return Fraction(bet_value * increment_bp, BP_DENOMINATOR) - odds.fixed_ev * bet_value
