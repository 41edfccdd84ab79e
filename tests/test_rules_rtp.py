"""Exact side-bet RTP (IT): perfect pairs 94.21 %, insurance 92.60 % with 6 decks."""

from __future__ import annotations

import itertools
import subprocess
import sys
from fractions import Fraction

from controller.rules.cards import full_deck
from controller.rules.rtp import as_percent, insurance_rtp, perfect_pairs_rtp
from controller.rules.sidebets import perfect_pair


def test_perfect_pairs_rtp_6_decks_is_94_21_it() -> None:
    assert perfect_pairs_rtp(6) == Fraction(293, 311)
    assert as_percent(perfect_pairs_rtp(6)) == "94.21"


def test_insurance_rtp_6_decks_is_92_60_it() -> None:
    assert insurance_rtp(6) == Fraction(288, 311)
    assert as_percent(insurance_rtp(6)) == "92.60"


def test_perfect_pairs_formula_matches_brute_force_enumeration() -> None:
    """Enumerate every ordered pair of a 2-deck pack with the real side-bet evaluator."""
    pack = full_deck() * 2
    pays = {"same_suit": 31, "same_colour": 11, "mixed_colour": 6}
    total = Fraction(0)
    pairs = 0
    for a, b in itertools.permutations(range(len(pack)), 2):
        r = perfect_pair([pack[a], pack[b]])
        total += pays[r] if r else 0
        pairs += 1
    assert total / pairs == perfect_pairs_rtp(2)


def test_insurance_with_seen_cards_changes_the_odds() -> None:
    assert insurance_rtp(6, removed=["KS", "QH"]) < insurance_rtp(6) < insurance_rtp(6, removed=["5S", "6H"])


def test_rtp_cli() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "controller.cli", "rtp", "--decks", "6"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "94.21 %" in out and "92.60 %" in out
