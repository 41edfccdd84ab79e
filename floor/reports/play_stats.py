"""The statistics of advantage-play detection (issue 32): the Hi-Lo count and how unlikely a trend is by chance.

- **Hi-Lo**: 2-6 count +1, 7-9 count 0, tens and aces count -1. The running count is the sum over the cards dealt
  (and shown) since the shuffle; the true count divides it by the decks still in the shoe.
- **Spearman's rank correlation** of bet size with the true count at bet time (ties given their average rank),
  and its one-sided p-value: the probability that bets placed without regard to the count show a correlation at
  least this large. Under that hypothesis ``rho * sqrt(n - 1)`` is close to a standard normal (n of 10 or more);
  the p-value is its upper tail. A flat bettor has no rank order: ``rho`` is None and nothing is claimed.
- **Entry count**: the true counts of the rounds a player played against those of the rounds of the same shoes
  dealt without him (the difference of their means, and the one-sided p-value of Mann-Whitney's U, normal
  approximation): a back-counter who sits down only when the count is high stands out whatever his bets; a
  player who never leaves his seat skips nothing and is never claimed.

Pure functions, no I/O, no third-party statistics package (none is in the requirements).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HI_LO = {1: -1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 0, 8: 0, 9: 0, 10: -1}  # by card value (1 = ace)
MIN_DECKS_LEFT = 0.25  # a true count is not divided by less than a quarter deck
MIN_PAIRS = 10  # fewer rounds with a count: no p-value (the normal approximation needs them)


def hi_lo(value: int) -> int:
    return HI_LO[value]


def true_count(running: int, cards_out: int, decks: int) -> float:
    left = max(decks - cards_out / 52, MIN_DECKS_LEFT)
    return running / left


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _pearson(a: list[float], b: list[float]) -> float | None:
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    if va == 0 or vb == 0:
        return None
    return sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / math.sqrt(va * vb)


def upper_tail(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class Trend:
    n: int  # rounds with a true count
    rho: float | None  # Spearman's rank correlation of bet with true count (None: no variation)
    p_value: (
        float | None
    )  # one-sided: a correlation this high by chance (None: too few rounds or no variation)


def spearman(counts: list[float], bets: list[float]) -> Trend:
    n = len(counts)
    if n < 3:
        return Trend(n, None, None)
    rho = _pearson(_ranks(counts), _ranks(bets))
    if rho is None:
        return Trend(n, None, None)
    p = upper_tail(rho * math.sqrt(n - 1)) if n >= MIN_PAIRS else None
    return Trend(n, rho, p)


@dataclass(frozen=True)
class Entry:
    n: int  # rounds played with a count
    skipped: int  # rounds of the same shoes dealt without the player, with a count
    mean: float | None  # mean true count at the player's bets
    difference: float | None  # mean at the player's bets minus mean at the rounds skipped
    p_value: float | None  # one-sided Mann-Whitney: played counts this much higher by chance


def entry_count(played: list[float], skipped: list[float]) -> Entry:
    """Were the rounds played at higher counts than the rounds of the same shoes the player sat out? A seated
    player skips nothing and is never claimed; a back-counter's rounds stand out."""
    n, m = len(played), len(skipped)
    mean = sum(played) / n if n else None
    if n < MIN_PAIRS or m < MIN_PAIRS:
        return Entry(n, m, mean, None, None)
    diff = (mean or 0.0) - sum(skipped) / m
    ranks = _ranks(played + skipped)
    u = sum(ranks[:n]) - n * (n + 1) / 2
    sigma = math.sqrt(n * m * (n + m + 1) / 12)
    return Entry(n, m, mean, diff, upper_tail((u - n * m / 2) / sigma))
