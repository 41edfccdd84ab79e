"""What a table's rule profile allows, for the pit terminal's buttons and chip selector: the dealer inputs it
can ever allow and its bet limits (only shipped profiles, looked up by a plain name)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from controller.actions import DECLINE_INSURANCE
from controller.terminal.pit_keys import DEALER_KEYS

_PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}\Z")


@dataclass(frozen=True)
class TableRules:
    """What the table's rule profile allows, for the buttons and the chip selector (unknown: everything)."""

    inputs: frozenset[str]
    min_bet: int | None = None
    max_bet: int | None = None
    book: str | None = None


ALL_RULES = TableRules(frozenset(DEALER_KEYS))


@lru_cache(maxsize=16)
def table_rules(profile: str | None) -> TableRules:
    """The dealer inputs a rule profile can ever allow (PT-2001 has no five-card rule, MO-2004 art.19 has) and
    its bet limits. The name comes from MQTT: only a plain profile name is looked up among the shipped
    profiles; anything else (or a profile that does not load) is 'unknown' and every button stays."""
    if not isinstance(profile, str) or not _PROFILE_NAME.fullmatch(profile):
        return ALL_RULES
    from controller.rules.profiles import ProfileError, load_profile

    try:
        p = load_profile(profile)
    except (ProfileError, OSError, ValueError):
        return ALL_RULES
    inputs = {"place_bet", "clear_bet", "no_more_bets", "hit", "stand", "split", "next_round", "cut"}
    if p.play.double != "none":
        inputs.add("double")
    if p.play.surrender:
        inputs.add("surrender")
    if p.play.five_card_rule:
        inputs.add("five_card")
    if p.insurance.offered:
        inputs |= {"insurance", DECLINE_INSURANCE}
        if p.insurance.even_money:
            inputs.add("even_money")
    if p.jackpot_allowed:
        inputs.add("jackpot_chip")
    return TableRules(frozenset(inputs), p.min_bet, p.max_bet, p.book)
