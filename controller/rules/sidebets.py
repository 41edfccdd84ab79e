"""Side bets and special prizes, settled from the cards alone (MO-2004 art.13-15, PT-2001 r.35, IT)."""

from __future__ import annotations

from collections.abc import Sequence

from controller.rules.cards import Card
from controller.rules.profiles import SideBetRule


def perfect_pair(cards: Sequence[Card]) -> str | None:
    """IT perfect pairs on the first two cards: same rank, then by colour and suit."""
    a, b = cards[0], cards[1]
    if a.rank != b.rank:
        return None
    if a.suit == b.suit:
        return "same_suit"
    return "same_colour" if a.colour == b.colour else "mixed_colour"


def sevens(dealt: Sequence[Card], *, first_pair_split: bool) -> str | None:
    """MO-2004 art.13.2: two 7s as the first two cards; three when that pair is split and the next card is 7.

    Only the highest combination pays (art.14.2).
    """
    if len(dealt) < 2 or dealt[0].rank != "7" or dealt[1].rank != "7":
        return None
    three = first_pair_split and len(dealt) >= 3 and dealt[2].rank == "7"
    cards = dealt[:3] if three else dealt[:2]
    suited = len({c.suit for c in cards}) == 1
    if three:
        return "three_suited" if suited else "three"
    return "two_suited" if suited else "two"


def over_under_13(cards: Sequence[Card], ace: str = "one") -> int:
    """Total of the first two cards (MO-2004 art.13.3), the ace as 1 or, by house choice, as 11 (art.8)."""
    ace_value = 11 if ace == "eleven" else 1
    return sum(ace_value if c.is_ace else c.value for c in cards[:2])


def special_prize(cards: Sequence[Card]) -> str | None:
    """6-7-8 of one suit or three 7s (PT-2001 r.35, MO-2004 art.15, PT-ONLINE-2015 r.25i), 3 cards."""
    if len(cards) != 3:
        return None
    ranks = sorted(c.rank for c in cards)
    if ranks == ["7", "7", "7"]:
        return "three_sevens"
    if ranks == ["6", "7", "8"] and len({c.suit for c in cards}) == 1:
        return "six_seven_eight_suited"
    return None


def side_bet_result(
    rule: SideBetRule, dealt: Sequence[Card], pairs_formed: int, first_pair_split: bool
) -> str | None:
    """The winning pay-table entry for a seat's side bet, or None when it loses."""
    if rule.name == "perfect_pairs":
        return perfect_pair(dealt)
    if rule.name == "any_pair":
        return "pair" if pairs_formed else None
    if rule.name == "sevens":
        return sevens(dealt, first_pair_split=first_pair_split)
    if rule.name == "over_13":
        return "win" if over_under_13(dealt, rule.ace) > 13 else None
    if rule.name == "under_13":
        return "win" if over_under_13(dealt, rule.ace) < 13 else None
    raise ValueError(f"unknown side bet {rule.name!r}")


def side_bet_net(rule: SideBetRule, result: str | None, stake: int, *, times: int = 1) -> int:
    """Net for the player: N to 1 pays N x stake; 'stake included' (IT) returns N x stake, net (N-1) x."""
    if result is None:
        return -stake
    mult = rule.pays[result]
    per = (mult - 1) * stake if rule.stake_included else mult * stake
    return per * times
