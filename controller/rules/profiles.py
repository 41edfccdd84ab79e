"""Rule profiles: TOML data files in firmware_configs/profiles/, validated on load.

Validation is the JSON Schema in schemas/profile.schema.json plus semantic checks the schema cannot express
(bet ratios, burn combinations, jackpot only where the book allows it). Errors name the offending key.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema

from controller.data import PROFILES_DIR, data_path

# package data (controller/data): found from the wheel and from the checkout alike
PROFILE_DIR = PROFILES_DIR
SCHEMA_PATH = data_path("schemas", "profile.schema.json")

# Every profile must cite its book for each of these (dealer errors and rule violations carry the citation).
CITATION_KEYS = (
    "decks", "deal_order", "face_up_card", "draw_on_21", "misdeal", "after_double", "split_aces",
    "dealer_draw", "nobody_in_play", "stand", "double", "double_after_split", "split", "resplit", "surrender",
    "insurance", "even_money", "five_card", "bet_limits", "max_bet", "blackjack", "special_prizes",
    "side_bets", "jackpot", "dealer_blackjack",
)  # fmt: skip

# Optional citations (newer situations) and the required one they fall back to.
_CITATION_FALLBACK = {
    "seats": "deal_order",
    "burn": "deal_order",
    "round_limit": "max_bet",
    "multiple_players": "bet_limits",
    "unclaimed_card": "misdeal",
}
CITATION_OPTIONAL = tuple(_CITATION_FALLBACK)

# Pay-table keys each side bet must define (controller/rules/sidebets.py evaluates them).
SIDE_BET_PAYS = {
    "perfect_pairs": {"mixed_colour", "same_colour", "same_suit"},
    "any_pair": {"pair"},
    "sevens": {"two", "two_suited", "three", "three_suited"},
    "over_13": {"win"},
    "under_13": {"win"},
}


PRIZE_NAMES = ("six_seven_eight_suited", "three_sevens")


class ProfileError(ValueError):
    """A profile that cannot be loaded; the message names the file and the bad key."""


class ProfileSyntaxError(ProfileError):
    """The profile's text is not TOML at all (as opposed to TOML with a bad key)."""


@dataclass(frozen=True)
class BurnPolicy:
    shoe_start: str  # "none" | "one" | "decks"  (PT-2001 r.10, MO-2004 art.4.1)
    per_round: bool  # MO-2004 art.4.2
    before_dealer_second: bool  # MO-2004 art.4.2


@dataclass(frozen=True)
class ShoePolicy:
    shufflers: tuple[str, ...]  # "manual" | "automatic" | "continuous" | "rng"
    cut_card: str  # "none" | "lowest_seat" (PT-2001 r.8) | "any_player_or_dealer" (MO-2004 art.2.1.1)
    warning_card_from_end: int  # PT-2001 r.9 (50), MO-2004 art.2.1.1 (30 or more); 0 = no warning card
    warning_card_single_player: str  # "middle" (PT-2001 r.9) | "same"
    last_round_on_warning: bool  # PT-2001 r.11, MO-2004 art.2.2.1
    reshuffle_after_any_round: bool = False  # MO-2004 art.2.2.2: the bank may reshuffle after any round


@dataclass(frozen=True)
class PlayRules:
    min_stand_total: int
    double: str  # "9-11" | "any" | "11" | "none"
    double_after_split: bool
    soft_double_ace_fixed: bool
    split_match: str  # "value" | "rank"
    max_hands: int  # 0 = no limit
    resplit_aces: bool
    surrender: bool
    surrender_vs_ace: bool
    five_card_rule: bool
    misdeal_card: str  # "r18" | "reassign"
    face_up_card_invalid: bool
    first_card_face_up_valid: bool
    # MO-2004 art.16.5: "a não ser que, anteriormente, tenha já decidido não separar" (False: a pair value the
    # player once declined to split may not be split later in the round; aces excepted, art.16.3).
    resplit_after_declining: bool = True
    # PT-2001 r.18 ("se nenhum vier a pedir cartas, a dita carta será para o jogo da banca") against r.19 (no
    # card on 17 or more): "void" when the dealer stands, or "dealer" (the card joins the dealer's hand anyway).
    unclaimed_card: str = "void"
    # MO-2004 art.6.1: a card the dealer drew on 17 or more "considera-se inválida e é retirada, podendo, no
    # entanto, considerar-se válida se não tiver sido mostrada": "void" always, or "valid" when not shown.
    unshown_dealer_card: str = "void"


@dataclass(frozen=True)
class InsuranceRules:
    offered: bool
    min: Fraction  # of the original bet
    max: Fraction
    even_money: bool
    even_money_vs: frozenset[str]  # "A" and/or "T" (ten-value)
    multiple_of_min: bool = False  # PT-2001 r.14 applied to the insurance stake too (house choice)


@dataclass(frozen=True)
class SideBetRule:
    name: str
    stake: str  # "free" | "half_main"
    stake_included: bool  # True: pays N x the stake in total (IT); False: N to 1
    pays: MappingProxyType[str, int]
    each_pair: bool = True  # any_pair: each pair formed after a split pays again (MO-2004 art.13.1.2)
    ace: str = "one"  # over_13 / under_13: the ace counts "one" or "eleven" (MO-2004 art.13.3 vs art.8)


@dataclass(frozen=True)
class PrizeRules:
    """Who qualifies for the special prizes (PT-2001 r.35, MO-2004 art.15, PT-ONLINE-2015 r.25i)."""

    split_hands: bool = True  # a split hand's three cards qualify
    across_split: bool = False  # the seat's first three cards dealt, split pairs included, also qualify
    after_double: str = "original_bet"  # "original_bet" | "doubled_bet" | "no"


@dataclass(frozen=True)
class Profile:
    name: str
    book: str
    title: str
    decks: int
    seats: int
    deal_direction: str  # "ascending" | "descending" seat numbers
    hole_card: bool
    dealer_peek: bool
    shoe: ShoePolicy
    burn: BurnPolicy
    min_bet: int
    max_bet: int
    max_multiple: int
    multiple_of_min: bool
    play: PlayRules
    insurance: InsuranceRules
    blackjack_pays: Fraction
    win_pays: Fraction
    insurance_pays: Fraction
    original_bet_only: str  # "none" | "doubles" (MO-2004 art.10.7)
    special_prizes: MappingProxyType[str, int] = field(hash=False)
    side_bets: MappingProxyType[str, SideBetRule] = field(hash=False)
    jackpot_allowed: bool = False
    # No hole card: the dealer takes the second card even when nobody is left in play (MO-2004 art.7.1), instead
    # of stopping at once (PT-2001 r.22).
    dealer_second_card_always: bool = False
    peek_with_ten: bool = True  # with dealer_peek: also check for blackjack with a ten-value card up
    max_players_per_seat: int = 1  # PT-2001 r.15-16: several (0: no limit); MO-2004 art.20.1.2: three
    single_player: bool = False  # online table for one player: every position is that player's (IT, RO)
    round_limit: int = 0  # IT: one player's bets in a round, positions and side bets included (0: none)
    max_side_bets: int = 0  # MO-2004 art.13: side bets per main bet besides insurance (0: no limit)
    rounding: str = "down"  # amounts that are not whole minor units: "down" (house's favour) or "up"
    prizes: PrizeRules = field(default_factory=PrizeRules, hash=False)
    citations: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    path: str = ""

    @property
    def continuous_shuffler_allowed(self) -> bool:
        return "continuous" in self.shoe.shufflers

    @property
    def shuffler_kinds(self) -> tuple[str, ...]:
        return self.shoe.shufflers

    def cite(self, key: str) -> str:
        if key in self.citations:
            return self.citations[key]
        return self.citations[_CITATION_FALLBACK[key]]  # an optional situation cites its parent rule

    def seat_order(self, seats: list[int] | set[int]) -> list[int]:
        """Seats in dealing order (PT-2001 r.17: seat-number order; IT deals from the other side)."""
        return sorted(seats, reverse=self.deal_direction == "descending")

    def burn_before_round(self, *, shoe_start: bool) -> int:
        """Cards to burn before a round's first card (PT-2001 r.10, MO-2004 art.4.1-4.2)."""
        n = 0
        if shoe_start:
            n += {"none": 0, "one": 1, "decks": self.decks}[self.burn.shoe_start]
        elif self.burn.per_round:
            n += 1
        return n


def list_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _key_path(err: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else "?"
        return f"{path}.{missing}" if path else missing
    if err.validator == "additionalProperties":
        extra = err.message.split("'")[1] if "'" in err.message else "?"
        return f"{path}.{extra}" if path else extra
    return path or "(top level)"


def _resolve(name_or_path: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or "/" in name_or_path:
        return candidate
    return PROFILE_DIR / f"{name_or_path}.toml"


def load_profile(name_or_path: str) -> Profile:
    """Load and validate a profile by name ("pt-2001") or path; raises ProfileError naming the bad key."""
    path = _resolve(name_or_path)
    if not path.is_file():
        known = ", ".join(list_profiles())
        raise ProfileError(f"profile {name_or_path!r} not found (known: {known})")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileSyntaxError(f"{path.name}: not valid TOML: {exc}") from exc
    return parse_profile(text, source=path.name, path=str(path))


# The one parser of rule profiles: every reader of a profile (a file, the text pinned in a session, the
# configuration's agreement checks, the service's state/software) goes through these two functions.
def profile_toml(text: str, *, source: str) -> dict[str, Any]:
    """A profile's TOML as parsed, not yet validated; ``ProfileSyntaxError`` if it is not TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileSyntaxError(f"{source}: not valid TOML: {exc}") from exc


def parse_profile(text: str, *, source: str, path: str = "") -> Profile:
    """A profile from its TOML text, validated (schema and rules); ``ProfileError`` naming the bad key."""
    return profile_from_dict(profile_toml(text, source=source), source=source, path=path)


def profile_from_dict(data: dict[str, Any], *, source: str = "<profile>", path: str = "") -> Profile:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        raise ProfileError(f"{source}: key {_key_path(err)}: {err.message}")
    _semantic_checks(data, source)
    t, bets, play, ins, pays = data["table"], data["bets"], data["play"], data["insurance"], data["payouts"]
    side = {
        name: SideBetRule(
            name,
            s.get("stake", "free"),
            s["stake_included"],
            MappingProxyType(dict(s["pays"])),
            each_pair=s.get("each_pair", True),
            ace=s.get("ace", "one"),
        )
        for name, s in data["side_bets"].items()
    }
    prizes = data["special_prizes"]
    return Profile(
        name=data["name"],
        book=data["book"],
        title=data["title"],
        decks=data["decks"],
        seats=t["seats"],
        deal_direction=t["deal_direction"],
        hole_card=t["hole_card"],
        dealer_peek=t["dealer_peek"],
        dealer_second_card_always=t.get("dealer_second_card_always", False),
        peek_with_ten=t.get("peek_with_ten", True),
        single_player=t.get("single_player", False),
        max_players_per_seat=t.get("max_players_per_seat", 1),
        round_limit=bets.get("round_limit", 0),
        max_side_bets=bets.get("max_side_bets", 0),
        rounding=pays.get("rounding", "down"),
        prizes=PrizeRules(
            split_hands=prizes.get("split_hands", True),
            across_split=prizes.get("across_split", False),
            after_double=prizes.get("after_double", "original_bet"),
        ),
        shoe=ShoePolicy(
            shufflers=tuple(data["shoe"]["shufflers"]),
            cut_card=data["shoe"]["cut_card"],
            warning_card_from_end=data["shoe"]["warning_card_from_end"],
            warning_card_single_player=data["shoe"]["warning_card_single_player"],
            last_round_on_warning=data["shoe"]["last_round_on_warning"],
            reshuffle_after_any_round=data["shoe"].get("reshuffle_after_any_round", False),
        ),
        burn=BurnPolicy(**data["burn"]),
        min_bet=bets["min_bet"],
        max_bet=bets["max_bet"],
        max_multiple=bets["max_multiple"],
        multiple_of_min=bets["multiple_of_min"],
        play=PlayRules(**play),
        insurance=InsuranceRules(
            offered=ins["offered"],
            min=Fraction(ins["min"]),
            max=Fraction(ins["max"]),
            even_money=ins["even_money"],
            even_money_vs=frozenset(ins["even_money_vs"]),
            multiple_of_min=ins.get("multiple_of_min", False),
        ),
        blackjack_pays=Fraction(pays["blackjack"]),
        win_pays=Fraction(pays["win"]),
        insurance_pays=Fraction(pays["insurance"]),
        original_bet_only=data["dealer_blackjack"]["original_bet_only"],
        special_prizes=MappingProxyType({k: prizes[k] for k in PRIZE_NAMES}),
        side_bets=MappingProxyType(side),
        jackpot_allowed=data["jackpot"]["allowed"],
        citations=MappingProxyType(dict(data["citations"])),
        path=path,
    )


def _semantic_checks(d: dict[str, Any], source: str) -> None:
    def bad(key: str, why: str) -> None:
        raise ProfileError(f"{source}: key {key}: {why}")

    bets = d["bets"]
    if bets["max_bet"] < bets["min_bet"]:
        bad("bets.max_bet", f"{bets['max_bet']} is below bets.min_bet {bets['min_bet']}")
    if bets["max_multiple"] and bets["max_bet"] > bets["max_multiple"] * bets["min_bet"]:
        bad("bets.max_bet", f"{bets['max_bet']} exceeds {bets['max_multiple']} x min_bet (PT-2001 r.37)")
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
