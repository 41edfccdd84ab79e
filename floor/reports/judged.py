"""Judged rounds (issue 44): a settled round's judgement (floor/reports/play_rounds.py ``seat_rounds``: each seat's
bet, stake, result and decisions against basic strategy, or why the round was refused) kept in ``judged_rounds``
(migration 11) by the judging pass (``tablectl floor judge``, floor/cli/judge.py), so that the sessions report
(floor/reports/sessions_play.py) reads a shift's judgements instead of replaying every round of it.

A row is tied to the exact round it judged: its ``digest`` is the SHA-256 of the round as rebuilt from the archive
(the round id and its description: bets, every card, every decision) and of ``JUDGE_CODE``, the judging code,
the round schema and the profiles this installation ships. A reader rebuilds the round from the archive as before
and uses the row only when the digests agree; a round repaired since it was judged (an event re-fetched), a row
written by other code or no row at all: the reader judges the round itself, as without the pass. So a row saves
the replays and the validation, never the archive's rebuild, and a report is complete and the same whether the pass
has run or not. A row is only ever written from ``seat_rounds`` run here (the round validated and replayed); the
rows are as trusted as the archive they sit beside (the same database and roles).

Not stored: what depends on the other rounds (the shoe number, the true count at the bets) and the profile's house
edge (read from the profile at report time, as before).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import psycopg

import controller.rules
from controller.rules.profiles import PROFILE_DIR
from controller.rules.rounds import SCHEMA_PATH
from controller.rules.strategy import Move
from floor.reports import play_rounds
from floor.reports.play_rounds import DecisionCheck, SeatRound, profile_edge, seat_rounds
from floor.reports.rounds import ArchivedRound, load_rounds

FORMAT = 1  # the judgement's JSON layout (``encode``); part of the digest


@cache
def judge_code() -> str:
    """SHA-256 of what a judgement depends on besides the round: the rules engine and strategy (controller/rules),
    the judging (floor/reports/play_rounds.py), the round schema and the shipped profiles; read once per process.
    Another version of any of them makes every stored judgement stale (judged again, by the pass or the reader)."""
    h = hashlib.sha256(f"judged-round format {FORMAT}\n".encode())
    files = sorted(Path(p) for d in controller.rules.__path__ for p in Path(d).glob("*.py"))
    files += [Path(str(play_rounds.__file__)), SCHEMA_PATH, *sorted(PROFILE_DIR.glob("*.toml"))]
    for f in files:
        data = f.read_bytes()
        h.update(f"{f.name} {len(data)}\n".encode())
        h.update(data)
    return h.hexdigest()


def digest(rnd: ArchivedRound, desc: dict[str, Any] | None = None) -> str:
    """The round as rebuilt (id and description) and the judging code: what a judgement is valid for."""
    text = json.dumps([judge_code(), rnd.round_id, desc if desc is not None else rnd.description()],
                      sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=repr)  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Judgement:
    """A round's seats as ``seat_rounds`` gives them but for shoe and count (set by the reader), and its problems."""

    seats: tuple[SeatRound, ...]
    problems: tuple[str, ...]

    def seat_rounds(self, *, shoe: int | None, count: float | None, profile: str) -> list[SeatRound]:
        edge = profile_edge(profile) if self.seats else 0.0
        return [SeatRound(s.round_id, shoe, s.seat, s.player, s.bet, s.staked, s.net, edge, count, s.checks)
                for s in self.seats]  # fmt: skip


def judge(rnd: ArchivedRound, desc: dict[str, Any] | None = None) -> Judgement:
    """Judge a complete, not void archived round now (validated and replayed: ``seat_rounds``)."""
    seats, problems = seat_rounds(desc or rnd.description(), round_id=rnd.round_id, shoe=None, count=None)
    return Judgement(tuple(seats), tuple(problems))


def encode(j: Judgement) -> dict[str, Any]:
    return {
        "seats": [
            [s.seat, s.player, s.bet, s.staked, s.net,
             [[c.taken.value, c.best.value, c.cost, list(c.hand), c.up] for c in s.checks]]
            for s in j.seats
        ],
        "problems": list(j.problems),
    }  # fmt: skip


def decode(round_id: str, data: Any) -> Judgement:
    """A stored judgement; ValueError (or TypeError, KeyError) when it is not one this code wrote."""
    seats = []
    for seat, player, bet, staked, net, checks in data["seats"]:
        cs = tuple(DecisionCheck(Move(t), Move(b), float(cost), tuple(str(x) for x in hand), str(up))
                   for t, b, cost, hand, up in checks)  # fmt: skip
        if not all(isinstance(v, int) for v in (seat, bet, staked, net)) or not isinstance(
            player, str | None
        ):
            raise ValueError("not a stored seat")
        seats.append(SeatRound(round_id, None, seat, player, bet, staked, net, 0.0, None, cs))
    return Judgement(tuple(seats), tuple(str(p) for p in data["problems"]))


@dataclass(frozen=True)
class Stored:
    digest: str
    judgement: Any  # the stored JSON, decoded only when its digest is the round's


def stored(conn: psycopg.Connection, site: str, table: str, rounds: list[ArchivedRound]) -> dict[int, Stored]:
    """The stored judgements of these rounds of one table, by their first event (one index range)."""
    if not rounds:
        return {}
    rows = conn.execute(
        "SELECT first_event, digest, judgement FROM judged_rounds WHERE site = %s AND table_id = %s"
        " AND first_event BETWEEN %s AND %s",
        (site, table, min(r.first_event for r in rounds), max(r.first_event for r in rounds)),
    ).fetchall()
    return {int(e): Stored(d, j) for e, d, j in rows}


def use_stored(got: Stored | None, rnd: ArchivedRound, desc: dict[str, Any]) -> Judgement | None:
    """The stored judgement when it was made of this very round by this code, else None (judge it now)."""
    if got is None or got.digest != digest(rnd, desc):
        return None
    try:
        return decode(rnd.round_id, got.judgement)
    except (ValueError, TypeError, KeyError):
        return None


@dataclass(frozen=True)
class ToStore:
    first_event: int
    round_id: str
    digest: str
    judgement: Judgement


@dataclass
class Pass:
    """What a judging pass found in its window: rounds judged already, judged now, and not judgeable (yet)."""

    current: int = 0  # a stored judgement of this very round
    new: list[ToStore] = field(default_factory=list)  # judged now: no stored judgement, or a stale one
    stale: int = 0  # of ``new``: a stored judgement of another round (repaired since) or other code
    open: int = 0  # void, or not complete in the archive (unsettled, an event missing): nothing to judge


def pending(conn: psycopg.Connection, site: str, table: str, since: datetime, until: datetime) -> Pass:
    """Judge the rounds of one table's window that have no current stored judgement (nothing is written here:
    floor/cli/judge.py stores them)."""
    archived = [r for r in load_rounds(conn, site, table, since, until) if r.site == site]
    have = stored(conn, site, table, archived)
    out = Pass()
    for rnd in archived:
        if rnd.void or not rnd.complete:
            out.open += 1
            continue
        desc = rnd.description()
        d = digest(rnd, desc)
        got = have.get(rnd.first_event)
        if got is not None and got.digest == d:
            out.current += 1
            continue
        out.stale += got is not None
        out.new.append(ToStore(rnd.first_event, rnd.round_id, d, judge(rnd, desc)))
    return out
