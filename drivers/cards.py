"""The card alphabet, defined once for the whole product (the shoe protocol, the rules engine, the jackpot, the
table core): a card code is a rank then a suit, e.g. "AS", "TD" (ten of diamonds), "KH"."""

from __future__ import annotations

RANKS = "A23456789TJQK"
SUITS = "SHDC"  # spades, hearts, diamonds, clubs
RED_SUITS = frozenset("HD")
BLACK_SUITS = frozenset("SC")
CARD_CODES: tuple[str, ...] = tuple(r + s for s in SUITS for r in RANKS)  # the 52 codes of one deck
