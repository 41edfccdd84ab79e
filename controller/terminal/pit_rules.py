"""Which dealer buttons the pit terminal lays out (docs/terminal.md "Keys").

What the dealer may do *now* is the table's ``state/table`` ``dealer_inputs`` only (view.py ``enabled_inputs``:
the table's state machine and rules engine decide it); the bet limits are its ``limits``. The table publishes
no list of the inputs its rule profile can *ever* allow, so which of the profile's optional decisions get a
button at all (no "Five cards" on a PT-2001 table) is the one thing still read from the profile itself: the
shipped profile named in the table's documents, its switches for doubling, surrender, the five-card rule and
insurance, for the layout only. Whatever the table lists in ``dealer_inputs`` has its button, whatever this
fallback says."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from controller.actions import DECLINE_INSURANCE
from controller.terminal.pit_keys import DEALER_KEYS

_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}\Z")
# The decisions a profile may leave out (the others every profile has): the layout's fallback reads these only.
OPTIONAL_DECISIONS = frozenset(
    {"double", "surrender", "five_card", "insurance", DECLINE_INSURANCE, "even_money"}
)


def profile_decisions(profile: Any) -> frozenset[str]:
    """The optional decisions a shipped rule profile can ever allow (PT-2001 has no five-card rule, MO-2004
    art.19 has). The name comes from MQTT: only a plain profile name is looked up among the shipped profiles;
    anything else (or a profile that does not load) is 'unknown' and every decision keeps its button."""
    if not isinstance(profile, str) or not _PROFILE_NAME.fullmatch(profile):
        return OPTIONAL_DECISIONS
    return _shipped_decisions(profile)


@lru_cache(maxsize=16)
def _shipped_decisions(profile: str) -> frozenset[str]:
    from controller.rules.profiles import ProfileError, load_profile

    try:
        p = load_profile(profile)
    except (ProfileError, OSError, ValueError):
        return OPTIONAL_DECISIONS
    offered = {
        "double": p.play.double != "none",
        "surrender": p.play.surrender,
        "five_card": p.play.five_card_rule,
        "insurance": p.insurance.offered,
        DECLINE_INSURANCE: p.insurance.offered,
        "even_money": p.insurance.offered and p.insurance.even_money,
    }
    return frozenset(d for d, yes in offered.items() if yes)


def shown_inputs(
    table: dict[str, Any], software: dict[str, Any], jackpot: dict[str, Any], enabled: set[str]
) -> set[str]:
    """The dealer inputs that have a button: every input the table accepts now (``enabled``); the jackpot chip
    only where the table's ``state/jackpot`` says it is entered by hand (r.41b; sensed chips, r.41a, have no
    key); the cut only at a batch shoe (PT-2001 r.8) or while the table waits for it; the profile's optional
    decisions as the fallback above says; every other input always."""
    decisions = profile_decisions(table.get("profile") or software.get("profile"))
    shown = {a for a in DEALER_KEYS if a not in OPTIONAL_DECISIONS or a in decisions}
    if not (jackpot.get("enabled") and jackpot.get("mode") == "manual"):
        shown.discard("jackpot_chip")
    if table.get("shuffler") != "batch" and table.get("state") != "cut":
        shown.discard("cut")
    return shown | (enabled & set(DEALER_KEYS))


@lru_cache(maxsize=1)
def shipped_games() -> tuple[tuple[str, str, str], ...]:
    """(profile name, rule book, title) of every shipped rule profile: the game's name a person reads and
    types ("Portugal land casino, Portaria 1364/2001"), the profile id the table takes (``pt-2001``)."""
    from controller.rules.profiles import ProfileError, list_profiles, load_profile

    games = []
    for name in list_profiles():
        try:
            p = load_profile(name)
        except (ProfileError, OSError, ValueError):
            continue
        games.append((p.name, p.book, p.title))
    return tuple(games)


def game_name(profile: str) -> str:
    """The game's name for the profile id (its title), or the id itself when it is not a shipped profile."""
    return next((title for name, _, title in shipped_games() if name == profile), profile)


def profile_of_game(text: str) -> str:
    """The profile id a person named by the game's title, its rule book ("PT-2001") or the id itself
    (case and spaces do not matter); anything else as typed (the table decides, and says why it refuses)."""
    wanted = " ".join(text.split()).casefold()
    for name, book, title in shipped_games():
        if wanted in (name.casefold(), book.casefold(), " ".join(title.split()).casefold()):
            return name
    return text.strip()
