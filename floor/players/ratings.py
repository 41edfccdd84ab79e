"""Player ratings (issue 41): each visit's figures and each player's over a window, from the archived rounds.

A visit's rounds are the rounds of its table, between its ``in`` and its end, with a bet on its seat; the seat's
figures per round are the floor's own (floor/reports/play_rounds.py: replayed through the rules engine, the settlement's
stakes, the count at bet time, each decision against basic strategy). The figures (names, meanings and signs:
floor/reports/figures.py) are a ``PlaySession``'s, so a rating and a play session never disagree on what a figure is:
rounds, handle, initial bets, average and largest bet, win (the house's), theoretical win (initial bets × the
exact house edge of the profile dealt: controller/rules/shoe_math.py via ``profile_edge``), play precision; and
here hours played and comp (theoretical win × the comp share). The tables do not record a buy-in yet: none.

A player's rating over the window sums his visits, every table: the same ``PlaySession`` is what the advantage-
play rules judge (floor/protection/advantage.py) over his whole play across tables and shoes, with the counts of the
rounds of the shoes he played that were dealt without him (a back-counter's or a wonger's entries). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal

from floor.players.visits import Visit
from floor.reports.sessions_play import Level, PlaySession, TableRound

MAX_ROUND_SPAN_S = 300.0  # a round counts at most this long towards hours played (figures.HOURS_PLAYED)


@dataclass(frozen=True)
class TimedRound:
    """A table's round with where it stands in the table's journal and how long it counts towards play."""

    site: str
    table: str
    round: TableRound
    first_event: int
    started: datetime | None
    span_s: float  # its start to the start of the table's next round (its own settlement if last), capped


def spans(starts: list[datetime | None], last_settled: datetime | None) -> list[float]:
    """Each round's span (see ``TimedRound``) from the table's round starts in order."""
    out = []
    for i, start in enumerate(starts):
        nxt = starts[i + 1] if i + 1 < len(starts) else last_settled
        s = (nxt - start).total_seconds() if start is not None and nxt is not None else 0.0
        out.append(min(max(s, 0.0), MAX_ROUND_SPAN_S))
    return out


def comp(theoretical_win: int, share_pct: Decimal) -> int:
    """figures.COMP: theoretical win × share %, rounded down, never below 0."""
    value = (Decimal(theoretical_win) * share_pct / 100).to_integral_value(rounding=ROUND_FLOOR)
    return max(0, int(value))


@dataclass
class Rating:
    player: str
    visits: list[Visit]
    play: PlaySession  # the figures (and the advantage-play measures)
    seconds: float = 0.0
    buy_in: int | None = None  # not recorded by the tables yet
    seats: list[str] = field(default_factory=list)  # "<table> seat N", in the order played

    @property
    def tables(self) -> list[str]:
        return sorted({f"{v.site}/{v.table}" for v in self.visits})

    @property
    def hours(self) -> float:
        return self.seconds / 3600

    @property
    def average_bet(self) -> int:
        """figures.AVERAGE_BET in minor units, rounded as the play sessions' report rounds it."""
        return round(self.play.average)

    def comp(self, share_pct: Decimal) -> int:
        return comp(self.play.theoretical_win, share_pct)


def _visit_rounds(v: Visit, rounds: list[TimedRound]) -> list[TimedRound]:
    return [
        t
        for t in rounds
        if v.holds(t.first_event, t.started) and any(s.seat == v.seat for s in t.round.seats)
    ]


def _add(r: Rating, v: Visit, mine: list[TimedRound]) -> None:
    for t in mine:
        [sr] = [s for s in t.round.seats if s.seat == v.seat]
        r.play.rounds.append(replace(sr, player=v.player))
        r.play.round_ids.append(t.round.round_id)
        r.play.shoes.append(t.round.shoe)
        r.play.continuous = r.play.continuous or t.round.continuous
        end = v.end
        cap = (end - t.started).total_seconds() if end is not None and t.started is not None else t.span_s
        r.seconds += max(0.0, min(t.span_s, cap))
    r.visits.append(v)
    r.seats.append(f"{v.table} seat {v.seat}")


def _skipped(r: Rating, played: dict[tuple[str, str], list[TimedRound]],
             tables: dict[tuple[str, str], list[TimedRound]]) -> None:  # fmt: skip
    """The counts of the rounds of the shoes he played, at each table, dealt without his bet there."""
    for key, mine in played.items():
        ids = {t.round.round_id for t in mine}
        shoes = {t.round.shoe for t in mine} - {None}
        for t in tables.get(key, []):
            if t.round.shoe in shoes and t.round.count is not None and t.round.round_id not in ids:
                r.play.skipped.append(t.round.count)


def rate_visit(v: Visit, tables: dict[tuple[str, str], list[TimedRound]]) -> Rating:
    mine = _visit_rounds(v, tables.get((v.site, v.table), []))
    r = Rating(v.player, [], PlaySession(Level.VISIT, v.site, v.table, v.seat, v.player))
    _add(r, v, mine)
    _skipped(r, {(v.site, v.table): mine}, tables)
    return r


def rate_player(player: str, visits: list[Visit], tables: dict[tuple[str, str], list[TimedRound]]) -> Rating:
    """Every visit of ``player`` (in order), summed over the tables: one rating, one ``PlaySession``."""
    site = visits[0].site if visits else ""
    r = Rating(player, [], PlaySession(Level.PLAYER_VISITS, site, "", None, player))
    played: dict[tuple[str, str], list[TimedRound]] = {}
    for v in sorted(visits, key=lambda v: (v.start, v.site, v.table, v.start_event)):
        mine = _visit_rounds(v, tables.get((v.site, v.table), []))
        _add(r, v, mine)
        played.setdefault((v.site, v.table), []).extend(mine)
    _skipped(r, played, tables)
    return r


def rate_players(visits: list[Visit], tables: dict[tuple[str, str], list[TimedRound]]) -> list[Rating]:
    by: dict[str, list[Visit]] = {}
    for v in visits:
        by.setdefault(v.player, []).append(v)
    return [rate_player(p, by[p], tables) for p in sorted(by)]
