"""Reading the archive into player ratings (issue 41): the player events of a window and the rounds of the tables
they sat at, rated (floor/players/ratings.py), with the registry's rows (names only where asked for)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import psycopg

from floor.players.events import TOPIC, PlayerEvent, card_of, parse_player_event
from floor.players.ratings import Rating, TimedRound, rate_players, rate_visit, spans
from floor.players.registry import TOMBSTONE, Registered, Settings, directory, find, settings
from floor.players.visits import Visit, build_visits
from floor.reports.sessions_play import JudgedTable, PlaySession, judge_table

LOOKBACK = timedelta(hours=24)  # a visit begun this long before the window is still seen
MAX_WINDOW = timedelta(days=31)


@dataclass
class PlayersReport:
    since: datetime
    until: datetime
    visits: list[Rating]
    players: list[Rating]
    registry: dict[str, Registered]  # by player reference ("card:<number>")
    settings: Settings
    problems: list[str] = field(default_factory=list)
    refused: int = 0  # player events that did not follow the contract (the reasons in problems)

    def label(self, player: str) -> str:
        """The player as reports name him: the card, an anonymous pseudonym, or the tombstone once erased."""
        reg = self.registry.get(player)
        return reg.reference if reg else player

    def player_id(self, player: str) -> str:
        reg = self.registry.get(player)
        return reg.player_id if reg else ""

    def name(self, player: str) -> str:
        reg = self.registry.get(player)
        return (reg.name or "") if reg else ""


def load_player_events(conn: psycopg.Connection, since: datetime, until: datetime,
                       player: str | None = None) -> tuple[list[PlayerEvent], list[str]]:  # fmt: skip
    rows = conn.execute(
        "SELECT site, table_id, event_id, ts, data FROM events WHERE topic = %s AND ts >= %s AND ts < %s"
        " AND (%s::text IS NULL OR data->>'player' = %s) ORDER BY ts, site, table_id, event_id",
        (TOPIC, since - LOOKBACK, until, player, player),
    ).fetchall()
    out: list[PlayerEvent] = []
    problems: list[str] = []
    for site, table, event_id, ts, data in rows:
        got = parse_player_event(site, table, event_id, ts, data if isinstance(data, dict) else {})
        if isinstance(got, str):
            problems.append(f"{site}/{table} event {event_id}: player event refused: {got}")
        else:
            out.append(got)
    return out, problems


def timed_rounds(site: str, table: str, judged: JudgedTable) -> tuple[list[TimedRound], list[str]]:
    archived, trs, problems = judged.archived, judged.rounds, judged.problems
    by_id = {r.round_id: r for r in archived}
    starts = [by_id[t.round_id].started for t in trs]
    last = by_id[trs[-1].round_id].settled if trs else None
    out = [TimedRound(site, table, t, by_id[t.round_id].first_event, by_id[t.round_id].started, s)
           for t, s in zip(trs, spans(starts, last), strict=True)]  # fmt: skip
    return out, [f"{site}/{table}: {p}" for p in problems]


def _reference(conn: psycopg.Connection, player: str) -> str:
    """``--player``: a card number, ``card:<number>``, an anonymous pseudonym, a registry pseudonym or tombstone."""
    if player.startswith("anon:") or card_of(player):
        return player
    if player.startswith(("P", TOMBSTONE)):
        reg = find(conn, player)
        if reg is not None and reg.card is None:
            raise LookupError(f"{reg.reference}: erased; its card is no longer known to the registry")
        if reg is not None:
            return f"card:{reg.card}"
    return f"card:{player}"


def load_players(conn: psycopg.Connection, since: datetime, until: datetime, player: str | None = None,
                 judged: dict[tuple[str, str], JudgedTable] | None = None) -> PlayersReport:  # fmt: skip
    """Every visit overlapping the window (of ``player`` only if given) and every player's rating. ``judged``: the
    tables' rounds of the same window judged already (``load_sessions``'s), used instead of replaying them."""
    ref = _reference(conn, player) if player else None
    events, problems = load_player_events(conn, since, until, ref)
    refused = len(problems)
    found = build_visits(events)
    visits = [v for v in found.visits if v.end is None or v.end >= since]
    problems += found.problems
    tables: dict[tuple[str, str], list[TimedRound]] = {}
    for key in sorted({(v.site, v.table) for v in visits}):
        done = (judged or {}).get(key) or judge_table(conn, key[0], key[1], since, until)
        tables[key], bad = timed_rounds(key[0], key[1], done)
        problems += bad
    visit_ratings = [rate_visit(v, tables) for v in visits]
    players = rate_players(visits, tables)
    registry = directory(conn, {v.player for v in visits})
    rep = PlayersReport(since, until, visit_ratings, players, registry, settings(conn), problems, refused)
    for r in visit_ratings + players:  # the figures name the player as the reports do: an erased card never
        r.play.player = rep.label(r.player)
    return rep


def player_sessions(conn: psycopg.Connection, since: datetime, until: datetime,
                    judged: dict[tuple[str, str], JudgedTable] | None = None) -> list[PlaySession]:  # fmt: skip
    """Each player's play over the window across tables and shoes (``Level.PLAYER_VISITS``), for the
    advantage-play rules (floor/protection/advantage.py) and surveillance's view."""
    return [r.play for r in load_players(conn, since, until, judged=judged).players]


__all__ = [
    "LOOKBACK",
    "MAX_WINDOW",
    "PlayersReport",
    "Visit",
    "load_player_events",
    "load_players",
    "player_sessions",
]
