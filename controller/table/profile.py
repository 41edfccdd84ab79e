"""The few profile settings the table state machine needs: the shoe procedure (PT-2001 r.8-11, r.52-62;
MO-2004 art.2, art.4), read from the rules profile plus the shuffler the table actually has."""

from __future__ import annotations

from dataclasses import dataclass

from controller.rules.profiles import Profile

# "as near as possible" to the target position (PT-2001 r.9): how far off the warning card may come out.
WARNING_TOLERANCE_CARDS = 10


@dataclass(frozen=True, slots=True)
class TableProfile:
    name: str
    book: str
    decks: int
    seats: int
    min_bet: int  # minor units
    max_bet: int
    continuous: bool  # continuous shuffler (PT-2001 r.56-62) or batch shoe with cut and warning card (r.8-11)
    cut_card: str  # "none" | "lowest_seat" (PT-2001 r.8) | "any_player_or_dealer" (MO-2004 art.2.1.1)
    warning_from_end: int  # 0: none; PT-2001 r.9: near the 50th; MO-2004 art.2.1.1: among the last 30 or more
    warning_at_least: (
        bool  # True: "N or more from the end" (MO-2004); False: "as near as possible to N" (PT-2001)
    )
    warning_single_player_middle: bool  # PT-2001 r.9: with one player, near the middle

    @property
    def total_cards(self) -> int:
        return self.decks * 52


def table_profile(profile: Profile, *, continuous: bool) -> TableProfile:
    shoe = profile.shoe
    return TableProfile(
        name=profile.name,
        book=profile.book,
        decks=profile.decks,
        seats=profile.seats,
        min_bet=profile.min_bet,
        max_bet=profile.max_bet,
        continuous=continuous,
        cut_card="none" if continuous else shoe.cut_card,  # PT-2001 r.52: no cut with a shuffler
        warning_from_end=0 if continuous else shoe.warning_card_from_end,
        warning_at_least=profile.book == "MO-2004",
        warning_single_player_middle=shoe.warning_card_single_player == "middle",
    )
