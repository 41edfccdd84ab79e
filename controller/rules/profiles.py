"""Rule profiles: TOML data files in firmware_configs/profiles/, validated on load. The one parser of them.

Validation is the JSON Schema in schemas/profile.schema.json plus semantic checks the schema cannot express
(bet ratios, burn combinations, jackpot only where the book allows it: controller/rules/profile_checks.py). Errors
name the offending key. The typed result, ``Profile`` and its settings, is controller/rules/profile_model.py;
its names are importable from here too (this module is the profiles' API).
"""

from __future__ import annotations

import json
import tomllib
from fractions import Fraction
from functools import cache, lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema

from controller.data import PROFILES_DIR, data_path
from controller.rules.profile_checks import SIDE_BET_PAYS, check_semantics
from controller.rules.profile_model import (
    CITATION_KEYS,
    CITATION_OPTIONAL,
    PRIZE_NAMES,
    BurnPolicy,
    InsuranceRules,
    PlayRules,
    PrizeRules,
    Profile,
    ProfileError,
    ProfileSyntaxError,
    ShoePolicy,
    SideBetRule,
)

__all__ = [
    "CITATION_KEYS",
    "CITATION_OPTIONAL",
    "PRIZE_NAMES",
    "PROFILE_DIR",
    "SCHEMA_PATH",
    "SIDE_BET_PAYS",
    "BurnPolicy",
    "InsuranceRules",
    "PlayRules",
    "PrizeRules",
    "Profile",
    "ProfileError",
    "ProfileSyntaxError",
    "ShoePolicy",
    "SideBetRule",
    "list_profiles",
    "load_profile",
    "parse_profile",
    "profile_from_dict",
    "profile_toml",
]

# package data (controller/data): found from the wheel and from the checkout alike
PROFILE_DIR = PROFILES_DIR
SCHEMA_PATH = data_path("schemas", "profile.schema.json")


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


def _shown(name: str) -> str:
    return repr(name[:80]) + ("..." if len(name) > 80 else "")


def load_profile(name_or_path: str) -> Profile:
    """Load and validate a profile by name ("pt-2001") or path (an operator's own: the command line, a round
    file); raises ProfileError naming the bad key, or saying in one line why the file cannot be read."""
    path = _resolve(name_or_path)
    try:
        if not path.is_file():
            known = ", ".join(list_profiles())
            raise ProfileError(f"profile {_shown(name_or_path)} not found (known: {known})")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileSyntaxError(f"{path.name}: not valid TOML: {exc}") from exc
    except OSError as exc:  # a name too long, a directory without permission, ...
        raise ProfileError(f"profile {_shown(name_or_path)}: cannot read it: {exc.strerror or exc}") from None
    return parse_profile(text, source=path.name, path=str(path))


def known_profile(name: object) -> Profile:
    """A profile named by someone else (a table's document, the wire): only the name of one this installation
    ships (``list_profiles``), never a path; ProfileError naming the known ones. No other file is opened."""
    known = list_profiles()
    if not isinstance(name, str) or name not in known:
        shown = _shown(name) if isinstance(name, str) else f"({type(name).__name__}, not a name)"
        raise ProfileError(f"profile {shown} is not one this floor knows (known: {', '.join(known)})")
    return load_profile(name)


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
    return _parsed(text, source, path)


@lru_cache(maxsize=32)
def _parsed(text: str, source: str, path: str) -> Profile:
    """The same text parsed once (a profile is frozen: every reader may share it). Parsing and validating cost
    about 10 ms; a profile is loaded again and again (every round file replayed, every round a test deals). A
    text that does not parse raises each time (nothing is kept)."""
    return profile_from_dict(profile_toml(text, source=source), source=source, path=path)


def profile_from_dict(data: dict[str, Any], *, source: str = "<profile>", path: str = "") -> Profile:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        raise ProfileError(f"{source}: key {_key_path(err)}: {err.message}")
    check_semantics(data, source)
    t, bets, play, ins, pays = data["table"], data["bets"], data["play"], data["insurance"], data["payouts"]
    side = {
        name: SideBetRule(
            name,
            s.get("stake", "free"),
            s["stake_included"],
            MappingProxyType(dict(s["pays"])),
            each_pair=s.get("each_pair", True),
            ace=s.get("ace", "one"),
            hands=s.get("hands", "own"),
            odd_bet=s.get("odd_bet", "refuse"),
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
        dealer_completes_hand=t.get("dealer_completes_hand", False),
        dealer_draws_with_nobody_in_play=t.get("dealer_draws_with_nobody_in_play", False),
        dealer_draws_after_blackjack=t.get("dealer_draws_after_blackjack", False),
        peek_with_ten=t.get("peek_with_ten", True),
        single_player=t.get("single_player", False),
        max_players_per_seat=t.get("max_players_per_seat", 1),
        shared_seat_decides=t.get("shared_seat_decides", "first_listed"),
        round_limit=bets.get("round_limit", 0),
        max_side_bets=bets.get("max_side_bets", 0),
        double_within_max=bets.get("double_within_max", False),
        seat_total_within_max=bets.get("seat_total_within_max", True),
        seat_total_counts_doubles=bets.get("seat_total_counts_doubles", False),
        rounding=pays.get("rounding", "down"),
        prizes=PrizeRules(
            split_hands=prizes.get("split_hands", True),
            across_split=prizes.get("across_split", False),
            after_double=prizes.get("after_double", "original_bet"),
            co_bets=prizes.get("co_bets", True),
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
            on_blackjack=ins.get("on_blackjack", True),
            co_bet_without_holder=ins.get("co_bet_without_holder", True),
            co_bet_even_money=ins.get("co_bet_even_money", "follows"),
            odd_bet=ins.get("odd_bet", "round_down"),
        ),
        blackjack_pays=Fraction(pays["blackjack"]),
        win_pays=Fraction(pays["win"]),
        insurance_pays=Fraction(pays["insurance"]),
        original_bet_only=data["dealer_blackjack"]["original_bet_only"],
        special_prizes=MappingProxyType({k: prizes[k] for k in PRIZE_NAMES}),
        side_bets=MappingProxyType(side),
        jackpot_allowed=data["jackpot"]["allowed"],
        jackpot_chips=data["jackpot"].get("chips", "per_player"),
        jackpot_different_suits=data["jackpot"].get("different_suits", "not_all_one"),
        jackpot_split_cards=data["jackpot"].get("split_cards", "deal_order"),
        citations=MappingProxyType(dict(data["citations"])),
        path=path,
    )


def game_title(profile: Profile) -> str:
    """The game as people name it, one way on every screen and report (issue 42): its book and the profile's
    title, e.g. "PT-2001: Portugal land casino, Portaria 1364/2001"."""
    return f"{profile.book}: {profile.title}"


@cache
def _shipped_games() -> dict[str, Profile]:
    games = {}
    for name in list_profiles():
        try:
            games[name] = load_profile(name)
        except ProfileError:  # a broken shipped profile is the profile checks' to report
            continue
    return games


def game_name(profile_id: Any, *, short: bool = False) -> str:
    """A game a document names by its profile id ("pt-2001") as people name it: "PT-2001: Portugal land casino,
    Portaria 1364/2001", or ``short`` its book's name alone ("PT-2001", where a screen has room for no more). An id
    that is not a shipped profile's is given back as it is (never opened as a file: it may come from the wire)."""
    text = str(profile_id) if profile_id is not None else ""
    found = _shipped_games().get(text)
    if found is None:
        return text
    return found.book if short else game_title(found)
