"""The checks a profile's JSON Schema cannot express: bet ratios, burn combinations, insurance bounds, side-bet
pay tables, citations, and what each book allows (decks, seats, a jackpot). Each failure names the bad key."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from controller.rules.profile_model import CITATION_KEYS, ProfileError

# Pay-table keys each side bet must define (controller/rules/sidebets.py evaluates them).
SIDE_BET_PAYS = {
    "perfect_pairs": {"mixed_colour", "same_colour", "same_suit"},
    "any_pair": {"pair"},
    "sevens": {"two", "two_suited", "three", "three_suited"},
    "over_13": {"win"},
    "under_13": {"win"},
}


# The maximum bet as a multiple of the minimum, where the book fixes one: PT-2001 r.37 "O valor máximo de aposta
# é igual a 30 vezes o valor mínimo" (read as the cap: a table whose maximum is lower breaks no rule of the book);
# PT-ONLINE-2015 r.11 "O valor da aposta máxima não pode exceder 100 vezes o valor da aposta mínima". MO-2004, IT
# and RO set none (the house's maximum).
BOOK_MAX_MULTIPLE: dict[str, tuple[int, str]] = {
    "PT-2001": (30, "PT-2001 r.37"),
    "PT-ONLINE-2015": (100, "PT-ONLINE-2015 r.11"),
}

# PT-2001 r.3; MO-2004 art.1.2 (one or more); PT-ONLINE-2015 r.4b; IT and RO: six.
_DECKS_ALLOWED = {
    "PT-2001": {4, 6},
    "MO-2004": set(range(1, 9)),
    "PT-ONLINE-2015": {4, 6, 8},
    "IT": {6},
    "RO": {6},
}
# PT-2001 r.2; MO-2004 art.3.1 (six or more); PT-ONLINE-2015 r.4a; IT 1-5; RO 1-3.
_SEATS_ALLOWED = {
    "PT-2001": {6, 7},
    "MO-2004": set(range(6, 10)),
    "PT-ONLINE-2015": set(range(1, 8)),
    "IT": set(range(1, 6)),
    "RO": set(range(1, 4)),
}


def check_semantics(d: dict[str, Any], source: str) -> None:
    """Raise ``ProfileError`` (naming the key) for the first rule the schema-valid profile ``d`` breaks."""

    def bad(key: str, why: str) -> None:
        raise ProfileError(f"{source}: key {key}: {why}")

    bets = d["bets"]
    if bets["max_bet"] < bets["min_bet"]:
        bad("bets.max_bet", f"{bets['max_bet']} is below bets.min_bet {bets['min_bet']}")
    bound = BOOK_MAX_MULTIPLE.get(d["book"])
    if bound is not None:
        # The book's bound belongs to the book, not to the file: a file cannot raise it or switch it off.
        most, rule = bound
        if not 1 <= bets["max_multiple"] <= most:
            bad("bets.max_multiple", f"{bets['max_multiple']}, but {d['book']} allows 1 to {most} ({rule})")
        if bets["max_bet"] > most * bets["min_bet"]:
            bad("bets.max_bet", f"{bets['max_bet']} exceeds {most} x min_bet ({rule})")
    if bets["max_multiple"] and bets["max_bet"] > bets["max_multiple"] * bets["min_bet"]:
        why = f"{bets['max_bet']} exceeds {bets['max_multiple']} x min_bet ({d['citations'].get('max_bet', d['book'])})"
        bad("bets.max_bet", why)
    if bets["multiple_of_min"] and bets["max_bet"] % bets["min_bet"]:
        bad("bets.max_bet", "must be a multiple of bets.min_bet (PT-2001 r.14)")
    if d["burn"]["before_dealer_second"] and not d["burn"]["per_round"]:
        bad(
            "burn.before_dealer_second",
            "needs burn.per_round (MO-2004 art.4.2 burns one per round and one more)",
        )
    if d["burn"]["before_dealer_second"] and d["table"]["hole_card"]:
        bad(
            "burn.before_dealer_second",
            "only with no hole card: the dealer's second card comes after the players",
        )
    if d["table"].get("dealer_second_card_always") and d["table"]["hole_card"]:
        bad(
            "table.dealer_second_card_always", "needs table.hole_card = false (the hole card is dealt anyway)"
        )
    if d["table"]["dealer_peek"] and not d["table"]["hole_card"]:
        bad("table.dealer_peek", "needs table.hole_card (there is no second card to peek at)")
    ins = d["insurance"]
    if Fraction(ins["min"]) > Fraction(ins["max"]):
        bad("insurance.min", f"{ins['min']} is above insurance.max {ins['max']}")
    if Fraction(ins["max"]) > 1:
        bad("insurance.max", "insurance cannot exceed the original bet (MO-2004 art.12.1)")
    if ins["even_money"] and not ins["even_money_vs"]:
        bad("insurance.even_money_vs", "must list the dealer cards even money is offered against")
    play = d["play"]
    if play["max_hands"] == 1:
        bad("play.max_hands", "1 would forbid splitting; use 2 for one split, 0 for no limit")
    if d["jackpot"]["allowed"] and d["book"] != "PT-2001":
        bad("jackpot.allowed", f"only PT-2001 (r.38) provides a progressive jackpot, not {d['book']}")
    for name, bet in d["side_bets"].items():
        missing = SIDE_BET_PAYS[name] - set(bet["pays"])
        extra = set(bet["pays"]) - SIDE_BET_PAYS[name]
        if missing:
            bad(f"side_bets.{name}.pays", f"missing {sorted(missing)}")
        if extra:
            bad(
                f"side_bets.{name}.pays.{sorted(extra)[0]}",
                f"unknown pay-table entry (known: {sorted(SIDE_BET_PAYS[name])})",
            )
    for name, bet in d["side_bets"].items():
        if "each_pair" in bet and name != "any_pair":
            bad(f"side_bets.{name}.each_pair", "only for any_pair (MO-2004 art.13.1.2)")
        if "odd_bet" in bet and bet.get("stake", "free") != "half_main":
            bad(f"side_bets.{name}.odd_bet", 'only for a stake of half the main bet (stake = "half_main")')
        if "hands" in bet and name != "any_pair":
            bad(f"side_bets.{name}.hands", "only for any_pair (MO-2004 art.13.1)")
        if "ace" in bet and name not in ("over_13", "under_13"):
            bad(f"side_bets.{name}.ace", "only for over_13 / under_13 (MO-2004 art.13.3)")
    if bets.get("round_limit") and bets["round_limit"] < bets["min_bet"]:
        bad("bets.round_limit", f"{bets['round_limit']} is below bets.min_bet {bets['min_bet']}")
    if d["table"].get("peek_with_ten") is not None and not d["table"]["dealer_peek"]:
        bad("table.peek_with_ten", "needs table.dealer_peek")
    if d["special_prizes"].get("across_split") and not d["special_prizes"].get("split_hands", True):
        bad("special_prizes.across_split", "needs special_prizes.split_hands")
    missing_cites = [k for k in CITATION_KEYS if k not in d["citations"]]
    if missing_cites:
        bad(f"citations.{missing_cites[0]}", "missing rule citation")
    if d["decks"] not in _DECKS_ALLOWED[d["book"]]:
        bad(
            "decks",
            f"{d['decks']} decks not allowed by {d['book']} (allowed: {sorted(_DECKS_ALLOWED[d['book']])})",
        )
    if d["table"]["seats"] not in _SEATS_ALLOWED[d["book"]]:
        bad("table.seats", f"{d['table']['seats']} seats not allowed by {d['book']}")
