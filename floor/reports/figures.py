"""The floor's money and pace figures, each named and defined once (issue 36): the name every report's CSV uses
(``_minor`` added to money columns), the label people read on pages and in the terminal, and the one line that
says what it means and which way its sign goes. ``tablectl floor report``, ``floor shift``, ``floor sessions``,
the dashboard's pages and their CSV and HTML take their headers from here; docs/floor.md's glossary repeats the
lines (tests/test_words.py checks they agree).

Every figure is in the house's view: ``win`` is positive when the house won. The tables publish each seat's
result for the player (``total_net``, ``seat_nets``, a hand's ``net``: positive when the player won); the
floor turns it over once, here (``house_win``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class Figure:
    name: str  # snake_case, as in the CSV (money columns get ``_minor``)
    label: str  # in words, as on pages and in the terminal
    money: bool
    doc: str  # what it means and its sign: the glossary's line

    @property
    def column(self) -> str:
        """The CSV column: money in integer minor units says so."""
        return f"{self.name}_minor" if self.money else self.name


ROUNDS = Figure("rounds", "rounds", False, "rounds settled (`events/settlement`) in the window")
HOURS_OPEN = Figure(
    "hours_open",
    "hours open",
    False,
    "hours within the window the table had a session open (from `events/session` opened to closed; a session "
    "still open counts to the window's end or now, whichever is earlier)",
)
ROUNDS_PER_HOUR = Figure(
    "rounds_per_hour",
    "rounds per hour open",
    False,
    "the game's pace: rounds ÷ hours open (not the window's hours; a dealer's row: ÷ hours on duty)",
)
HANDLE = Figure(
    "handle",
    "handle",
    True,
    "what the players staked against the house: main bets with doubles and splits + side bets + insurance",
)
PAID = Figure(
    "paid",
    "paid to players",
    True,
    "what went back to the players: stakes returned on wins and pushes + winnings (= handle − win)",
)
WIN = Figure(
    "win",
    "win (house)",
    True,
    "the house's result: positive when the house won, negative when the players did (= handle − paid)",
)
HOLD = Figure(
    "hold_pct", "hold %", False, "win ÷ handle × 100 (positive when the house won; none without handle)"
)
THEORETICAL_WIN = Figure(
    "theoretical_win",
    "theoretical win",
    True,
    "what the house should win on that play: Σ initial bets × the house edge of the round's rule profile "
    "(basic strategy for the profile's decks: controller/rules/shoe_math.py, `tablectl strategy`); a profile the "
    "floor does not know adds 0",
)
INITIAL_BETS = Figure(
    "initial_bets",
    "initial bets",
    True,
    "Σ each seat's original main bet (before doubles and splits): the basis of theoretical win and bet sizes",
)

# The progressive jackpots (PT-2001 r.38-50; issue 40): staked on and paid from a pool, not against the house, so
# apart from handle, paid and win. A table runs its own meter or joins a link (docs/jackpot.md): its own figures
# count only the ``events/jackpot`` without a ``link``, the linked ones only those with one.
JACKPOT_HANDLE = Figure(
    "jackpot_handle",
    "jackpot chips",
    True,
    "the table's own progressive: chips collected (`events/jackpot` `contribution` without `link`) × the chip "
    "value of the table's `state/jackpot` (PT-2001 r.47): staked into the table's own pool, positive; not in handle",
)
JACKPOT_CONTRIBUTIONS = Figure(
    "jackpot_contributions",
    "jackpot contributions",
    True,
    "what those chips added to the table's own meter: the meter after each contribution minus the one before it "
    "(`events/jackpot` without `link`), positive; not in win",
)
JACKPOT_PAYOUTS = Figure(
    "jackpot_payouts",
    "jackpot payouts",
    True,
    "Σ `events/jackpot` `paid` amounts of the table's own meter (without `link`): paid to the players from its "
    "pool, positive; not in paid or win",
)
LINKED_CONTRIBUTIONS = Figure(
    "linked_jackpot_contributions",
    "linked jackpot contributions",
    True,
    "Σ `amount_minor` of the table's `events/jackpot` `contribution` with a `link` (chips × chip value, as the "
    "table sent them to the linked progressive's meter, which its controller keeps: `tablectl floor progressive "
    "report`): staked by the players into the link's pool at this table, positive; not in handle, win or the "
    "table's own jackpot figures",
)
LINKED_PAID = Figure(
    "linked_jackpot_paid",
    "linked jackpot paid",
    True,
    "Σ `amount_minor` of the table's `events/jackpot` `paid` with a `link`: the link's prizes paid to the players "
    "at this table from the link's pool, positive (out of the pool); not in paid, win or the table's own jackpot "
    "figures",
)

# A player's rating (issue 41, floor/players/ratings.py)
HOURS_PLAYED = Figure(
    "hours_played",
    "hours played",
    False,
    "a player's time at a seat with a bet: each round he bet on counts from its start to the start of the "
    "table's next round (at most 5 minutes; the table's last round: to its settlement), never past his visit's end",
)
AVERAGE_BET = Figure(
    "average_bet",
    "average bet",
    True,
    "initial bets ÷ the rounds with a bet (the original main bet per round)",
)
LARGEST_BET = Figure("largest_bet", "largest bet", True, "the largest original main bet of a round")
PLAY_PRECISION = Figure(
    "precision_pct",
    "play precision %",
    False,
    "the share of the hand decisions that match basic strategy for the shoe dealt × 100 (floor/reports/play_rounds.py; "
    "none without a decision)",
)
BUY_IN = Figure(
    "buy_in",
    "buy-in",
    True,
    "cash and chips the player brought to the table, where the table records it (the tables do not record it "
    "yet: shown empty)",
)
COMP = Figure(
    "comp",
    "comp",
    True,
    "what the casino's policy gives back: theoretical win × the comp share (`tablectl floor players settings "
    "--comp-share`, per cent), rounded down; never below 0",
)

GLOSSARY = (ROUNDS, HOURS_OPEN, ROUNDS_PER_HOUR, HANDLE, PAID, WIN, HOLD, THEORETICAL_WIN, INITIAL_BETS,
            JACKPOT_HANDLE, JACKPOT_CONTRIBUTIONS, JACKPOT_PAYOUTS, LINKED_CONTRIBUTIONS, LINKED_PAID,
            HOURS_PLAYED, AVERAGE_BET, LARGEST_BET, PLAY_PRECISION, BUY_IN, COMP)  # fmt: skip


def house_win(player_net: int) -> int:
    """The house's win from a result the table published for the players (``total_net``, a seat's net)."""
    return -player_net


def paid(handle: int, win: int) -> int:
    return handle - win


def hold_pct(win: int, handle: int) -> Decimal | None:
    return (Decimal(win) * 100 / handle).quantize(Decimal("0.01")) if handle else None


def per_hour(rounds: int, hours: Decimal) -> Decimal | None:
    return (rounds / hours).quantize(Decimal("0.1")) if hours > 0 else None
