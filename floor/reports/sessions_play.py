"""Play sessions on the floor (issue 32): each seat's continuous play and each player's, with what a table-games
manager and surveillance read of them.

- A **seat session** is a seat's continuous play at one table: consecutive rounds with a bet on that seat, broken
  when the seat sits out more than ``gap`` rounds of the table or the shoe changes (``state/shoe.shoe_no``).
- A **player session** is the same for a player identity, where a round's bet names a ``player`` (a rating
  system's card): the player's rounds at the table, whatever seat, broken the same way. A **player** row sums one
  identity's rounds over the whole window, every table: what a back-counter's short sessions add up to.

Per session (names and signs: floor/reports/figures.py, as in every report): rounds, handle (all the seat staked against
the house: hands with doubles and splits, insurance, side bets), initial bets (Σ original main bets), average,
largest and smallest bet, bet spread (largest ÷ smallest), win (the house's: −Σ the seat's results, + when the
house won), theoretical win (initial bets × the profile's house edge for its shoe, controller/rules/shoe_math.py),
play precision (the share of the hand decisions that match basic strategy for that shoe, floor/reports/play_rounds.py)
and the expected cost of the others (Σ cost per unit × bet, minor units), and, for a batch shoe with a cut card, the
correlation of bet with the Hi-Lo true count at bet time and its p-value, and the mean count at the player's bets
(floor/reports/play_stats.py). With a continuous shuffler there is no count: the measure is "not applicable".

The count is computed here, on the floor, from the archived cards of the rounds before the bet: a shoe's count is
known only from its first round on (``dealt_this_shoe`` 0 before it) and only while every round of it is
archived complete; otherwise the rounds of that shoe have no count (never a guess). Nothing here is published.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

import psycopg

from floor.common.text import whole
from floor.reports.figures import house_win
from floor.reports.judged import Stored, stored, use_stored
from floor.reports.play_rounds import SeatRound, ShoeCount, seat_rounds
from floor.reports.play_stats import Entry, Trend, entry_count, spearman
from floor.reports.rounds import ArchivedRound, load_rounds

DEFAULT_GAP = 5  # rounds a seat may sit out without ending its session
CONTINUOUS = "continuous"


class Level:
    SEAT = "seat"
    PLAYER_SESSION = "player_session"
    PLAYER = "player"
    VISIT = "visit"  # a player's visit at a seat (issue 41, floor/players/ratings.py)
    PLAYER_VISITS = "player_visits"  # every visit of a player in the window, across tables (issue 41)


class CountedBet(NamedTuple):
    """A round whose true count at bet time is known: that count, and the seat's original main bet (minor units)."""

    true_count: float
    bet: int


@dataclass
class PlaySession:
    level: str  # Level.*
    site: str
    table: str  # "" for a player row over several tables
    seat: int | None
    player: str | None
    shoes: list[int | None] = field(default_factory=list)
    round_ids: list[str] = field(default_factory=list)
    rounds: list[SeatRound] = field(default_factory=list)
    continuous: bool = False  # a round came from a continuous shuffler: no count measure
    skipped: list[float] = field(default_factory=list)  # counts of the rounds of its shoes dealt without it

    @property
    def key(self) -> str:
        who = f"seat {self.seat}" if self.level == Level.SEAT else f"player {self.player}"
        first = self.round_ids[0] if self.round_ids else ""
        # followed across tables: its first round says when
        if self.level in (Level.VISIT, Level.PLAYER_VISITS):
            return f"{self.site}/{self.level}/{who}/{self.table}/{first}"
        return f"{self.site}/{self.table}/{who}/{first}" if self.table else f"{self.site}/{who}"

    @property
    def handle(self) -> int:
        return sum(r.staked for r in self.rounds)

    @property
    def initial_bets(self) -> int:
        return sum(r.bet for r in self.rounds)

    @property
    def largest(self) -> int:
        return max((r.bet for r in self.rounds), default=0)

    @property
    def smallest(self) -> int:
        return min((r.bet for r in self.rounds), default=0)

    @property
    def average(self) -> float:
        return self.initial_bets / len(self.rounds) if self.rounds else 0.0

    @property
    def spread(self) -> float | None:
        return self.largest / self.smallest if self.smallest else None

    @property
    def win(self) -> int:
        return house_win(sum(r.net for r in self.rounds))

    @property
    def theoretical_win(self) -> int:
        return round(sum(r.bet * r.edge for r in self.rounds))

    @property
    def decisions(self) -> int:
        return sum(len(r.checks) for r in self.rounds)

    @property
    def precision(self) -> float | None:
        n = self.decisions
        return sum(c.matches for r in self.rounds for c in r.checks) / n if n else None

    @property
    def cost(self) -> int:
        """The expected cost of the decisions away from basic strategy, minor units (the house's gain)."""
        return round(sum(c.cost * r.bet for r in self.rounds for c in r.checks))

    def counted(self) -> list[CountedBet]:
        """The rounds whose true count at bet time is known, in order."""
        return [CountedBet(r.true_count, r.bet) for r in self.rounds if r.true_count is not None]

    def trend(self) -> Trend | None:
        """Bet against true count; None: not applicable (a continuous shuffler)."""
        if self.continuous:
            return None
        rs = self.counted()
        return spearman([r.true_count for r in rs], [float(r.bet) for r in rs])

    def entry(self) -> Entry | None:
        if self.continuous:
            return None
        return entry_count([r.true_count for r in self.counted()], self.skipped)


@dataclass(frozen=True)
class TableRound:
    """One round of a table, as the grouping needs it."""

    index: int  # the round's place among the table's rounds in the window
    round_id: str
    shoe: int | None
    continuous: bool
    seats: list[SeatRound]
    count: float | None = None  # the true count at its bets


def group_sessions(
    site: str, table: str, rounds: list[TableRound], gap: int = DEFAULT_GAP
) -> list[PlaySession]:
    """Seat sessions and player sessions of one table's rounds (in order)."""
    out: list[PlaySession] = []
    open_: dict[tuple[str, object], tuple[PlaySession, int]] = {}
    for tr in rounds:
        for sr in tr.seats:
            keys = [(Level.SEAT, sr.seat)] + ([(Level.PLAYER_SESSION, sr.player)] if sr.player else [])
            for level, who in keys:
                found = open_.get((level, who))
                if found is None or tr.index - found[1] > gap + 1 or found[0].shoes[-1] != tr.shoe:
                    s = PlaySession(level, site, table, sr.seat if level == Level.SEAT else None, sr.player)
                    out.append(s)
                else:
                    s = found[0]
                s.rounds.append(sr)
                s.round_ids.append(tr.round_id)
                s.shoes.append(tr.shoe)
                s.continuous = s.continuous or tr.continuous
                open_[(level, who)] = (s, tr.index)
    _skipped(out, rounds)
    return out


def _skipped(sessions: list[PlaySession], rounds: list[TableRound]) -> None:
    """Each session's skipped counts: the rounds of its shoes in which its seat (or player) had no bet."""
    for s in sessions:
        shoes = set(s.shoes) - {None}
        for tr in rounds:
            if tr.shoe not in shoes or tr.count is None:
                continue
            if s.level == Level.SEAT:
                here = any(sr.seat == s.seat for sr in tr.seats)
            else:
                here = any(sr.player == s.player for sr in tr.seats)
            if not here:
                s.skipped.append(tr.count)


def player_totals(sessions: list[PlaySession]) -> list[PlaySession]:
    """One row per player identity: every round of its player sessions in the window."""
    by: dict[tuple[str, str], PlaySession] = {}
    for s in sessions:
        if s.level != Level.PLAYER_SESSION or s.player is None:
            continue
        p = by.setdefault((s.site, s.player), PlaySession(Level.PLAYER, s.site, "", None, s.player))
        p.rounds += s.rounds
        p.round_ids += s.round_ids
        p.shoes += s.shoes
        p.continuous = p.continuous or s.continuous
    seen: set[tuple[str, str, str, int | None]] = set()
    for s in sessions:  # the identity's skipped rounds, once per shoe (a session never spans two shoes)
        key = (s.site, s.player or "", s.table, s.shoes[0] if s.shoes else None)
        if s.level == Level.PLAYER_SESSION and s.player is not None and key not in seen:
            seen.add(key)
            by[(s.site, s.player)].skipped += s.skipped
    return [by[k] for k in sorted(by)]


@dataclass(frozen=True)
class ShoeState:
    event_id: int
    shoe_no: int | None
    continuous: bool
    decks: int | None
    dealt: int | None


def shoe_states(
    conn: psycopg.Connection, site: str, table: str, rounds: list[ArchivedRound] | None = None
) -> list[ShoeState]:
    """The table's ``state/shoe`` documents in order; with ``rounds``, only those ``table_rounds`` reads for them:
    the last one before each round's first event (one short backward range of the table's ids per round, never the
    shoe's updates of every card in between)."""
    if rounds is not None and not rounds:
        return []
    cols = "event_id, data->'shoe_no', data->>'shuffler', data->'decks', data->'dealt_this_shoe'"
    if rounds is None:
        rows = conn.execute(
            f"SELECT {cols} FROM events WHERE site = %s AND table_id = %s AND topic = 'state/shoe' ORDER BY event_id",
            (site, table),
        ).fetchall()
    else:
        rows = conn.execute(
            f"SELECT DISTINCT s.* FROM unnest(%(firsts)s::bigint[]) AS r(first) CROSS JOIN LATERAL (SELECT {cols}"
            " FROM events WHERE site = %(site)s AND table_id = %(table)s AND topic = 'state/shoe'"
            " AND event_id < r.first ORDER BY event_id DESC LIMIT 1) s ORDER BY 1",
            {"site": site, "table": table, "firsts": sorted({r.first_event for r in rounds})},
        ).fetchall()
    return [ShoeState(e, whole(n), s == CONTINUOUS, whole(d), whole(t)) for e, n, s, d, t in rows]


def table_rounds(
    archived: list[ArchivedRound], shoes: list[ShoeState], judged: dict[int, Stored] | None = None
) -> tuple[list[TableRound], list[str]]:
    """The table's rounds with each seat's figures and the count at bet time (see the module's text). ``judged``:
    the rounds' stored judgements by first event (floor/reports/judged.py), each used only when it was made of the
    very round rebuilt here; any other round is judged now."""
    ids = [s.event_id for s in shoes]
    out: list[TableRound] = []
    problems: list[str] = []
    count: ShoeCount | None = None
    current: int | None = None
    for i, rnd in enumerate(archived):
        at = bisect.bisect_left(ids, rnd.first_event) - 1
        state = shoes[at] if at >= 0 else None
        shoe_no = state.shoe_no if state else None
        continuous = state.continuous if state else False
        if shoe_no != current or state is None:
            current = shoe_no
            fresh = state is not None and not continuous and state.decks and state.dealt == 0
            count = ShoeCount(state.decks) if fresh and state and state.decks else None
        if (
            rnd.void
        ):  # no seat figures (bets returned), but its cards are out of the shoe: counted when all known
            known = (
                rnd.hidden_at is None
                and not rnd.missing
                and all(isinstance(c.get("card"), str) for c in rnd.cards)
            )
            count = count if known else None
            if count is not None:
                count.feed(rnd.cards)
            continue
        if not rnd.complete:
            problems.append(
                f"round {rnd.round_id}: incomplete in the archive ({'; '.join(rnd.all_missing())})"
            )
            count = None  # the cards of this round are not all known: no count for the rest of the shoe
            continue
        tc = count.true() if count is not None else None
        desc = rnd.description()
        kept = use_stored(judged.get(rnd.first_event), rnd, desc) if judged else None
        if kept is not None:
            seats, bad = (
                kept.seat_rounds(shoe=shoe_no, count=tc, profile=desc["profile"]),
                list(kept.problems),
            )
        else:
            seats, bad = seat_rounds(desc, round_id=rnd.round_id, shoe=shoe_no, count=tc)
        problems += bad
        if count is not None:
            count.feed(desc["cards"])
        out.append(TableRound(i, rnd.round_id, shoe_no, continuous, seats, tc))
    return out, problems


@dataclass
class JudgedTable:
    """One table's rounds of a window as archived and as judged (``table_rounds``), with what could not be used:
    kept by ``load_sessions`` so the players' ratings of the same window (floor/players/) replay nothing again."""

    archived: list[ArchivedRound]
    rounds: list[TableRound]
    problems: list[str]


@dataclass
class SessionsReport:
    sessions: list[PlaySession]
    players: list[PlaySession]
    problems: list[str]
    tables: dict[tuple[str, str], JudgedTable] = field(default_factory=dict)


def judge_table(
    conn: psycopg.Connection, site: str, table: str, since: datetime, until: datetime
) -> JudgedTable:
    archived = [r for r in load_rounds(conn, site, table, since, until) if r.site == site]
    trs, bad = table_rounds(
        archived, shoe_states(conn, site, table, archived), stored(conn, site, table, archived)
    )
    return JudgedTable(archived, trs, bad)


def load_sessions(
    conn: psycopg.Connection,
    since: datetime,
    until: datetime,
    *,
    table: str | None = None,
    gap: int = DEFAULT_GAP,
) -> SessionsReport:
    tables = conn.execute(
        "SELECT site, table_id FROM floor_tables WHERE (%s::text IS NULL OR table_id = %s) ORDER BY 1, 2",
        (table, table),
    ).fetchall()
    sessions: list[PlaySession] = []
    problems: list[str] = []
    judged: dict[tuple[str, str], JudgedTable] = {}
    for site, table_id in tables:
        j = judged[(site, table_id)] = judge_table(conn, site, table_id, since, until)
        sessions += group_sessions(site, table_id, j.rounds, gap)
        problems += [f"{site}/{table_id}: {p}" for p in j.problems]
    return SessionsReport(sessions, player_totals(sessions), problems, judged)
