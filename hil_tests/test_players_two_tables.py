"""Issue 41, "Done when": two players across two real tables, rated on the floor, checked against the tables' own
journals.

The floor of ``tablectl demo --floor`` (tablebench/floor_stack.py): two real table services (``tablectl run``, the
emulated shoe on a pty), each behind its own mosquitto with the shipped table ACL and the rendered floor bridge,
the floor broker with the floor ACL, a real archive worker (``tablectl floor archive``) and PostgreSQL. Player A
is seated at table 1 through the pit terminal's real input path: the Textual pit app runs headless against table
1's broker and a keyboard-wedge card reader's bytes go through the terminal's parser (as
tests/test_terminal_players.py does). Player B is sent as the dealer's ``player_in``. Rounds are dealt with bets
at their seats (and one with B's seat left without a bet: not rated); A leaves table 1 and plays at table 2; B
leaves while his last round is in play (still his: he sat there when it was dealt); both tables close. Then each
rating of ``tablectl floor players --csv`` and of ``load_players`` equals, to the minor unit, a recomputation from
each table's SQLite journal (the settlements of the player's seat of the rounds dealt between his ``in`` and his
``out``); the moves' times agree (record, envelope, the floor's visit). Finally the erasure of A removes his
personal data, both tables' journals still verify (``tablectl journal verify``) and the archive's chains still
verify."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.cli import main as tablectl
from controller.journal.event_chain import EVENT_GENESIS, read_chain
from controller.rules.profiles import load_profile
from controller.terminal.pit import PitApp
from floor.players.load import load_players
from floor.players.registry import register
from floor.reports.play_rounds import profile_edge
from tablebench.demo_dealer import AutoDealer
from tablebench.demo_session import DEMO_SUPERVISOR, prepare_session
from tablebench.demo_terminal import terminal_connection
from tablebench.emulator.control_client import ControlClient
from tablebench.floor_stack import FloorOptions, FloorStack
from tablebench.stack import DEMO_PINS, Stack
from tests.support.floor import wait_until
from tests.test_terminal import SIZE, settle, until
from tests.test_terminal_players import reader_types, seats

pytestmark = [pytest.mark.hil, pytest.mark.timeout(240)]

PROFILE = "pt-2001"
CARD_A, CARD_B = "6012345678", "4711AB"  # A: swiped at the pit terminal; B: the dealer's command
SWIPE_A = f"%B{CARD_A}^DOE/JANE^2812?;{CARD_A}=2812?"  # track 1 (the name: never sent) then track 2
SEAT_A, SEAT_B, SEAT_A2 = 3, 1, 5
WAIT = 30.0


@dataclass
class Played:
    floor: FloorStack
    since: datetime
    until: datetime
    journals: dict[str, Path]  # table id -> its SQLite journal
    a_id: str  # A's pseudonym (registered with a name before he played)


class Table:
    """One table's dealer client, shoe control and scripted dealer (tablebench/demo_dealer.py)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack

    async def __aenter__(self) -> Table:
        await prepare_session(self.stack, PROFILE, lambda _line: None)
        self.client = self.stack.client("dealer")
        self.sup = self.stack.client("supervisor1")
        await self.client.connect()
        await self.sup.connect()
        await self.client.wait_for(lambda v: {"table", "round", "shoe", "lid"} <= v.states.keys(), WAIT)
        self.ctl = await ControlClient.connect(self.stack.shoe_control)
        self.dealer = AutoDealer(self.client, self.ctl, load_profile(PROFILE).min_bet, lambda _line: None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ctl.close()
        await self.client.close()
        await self.sup.close()

    async def deal(self, *bets: tuple[tuple[int, int], ...]) -> None:
        """One round per entry, with those (seat, amount) bets."""
        for b in bets:
            self.dealer.bets = b
            await self.dealer.play_round()

    async def close(self) -> None:
        await self.sup.supervisor(DEMO_SUPERVISOR, DEMO_PINS[DEMO_SUPERVISOR], "close_table")
        await self.client.wait_for(lambda v: v.states["table"].get("state") == "closed", WAIT)


async def play(floor: FloorStack) -> None:
    t1, t2 = floor.tables
    m = load_profile(PROFILE).min_bet
    async with Table(t1) as one, Table(t2) as two:
        # A: the card reader's bytes through the pit terminal's real input path, at table 1
        app = PitApp(terminal_connection(t1, PROFILE))
        async with app.run_test(size=SIZE) as pilot:
            await settle(
                app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting"
            )
            await pilot.press(str(SEAT_A))
            reader_types(app, SWIPE_A)
            await settle(
                app, pilot, lambda _v: seats(app).get(str(SEAT_A), {}).get("player") == f"card:{CARD_A}"
            )
            await until(pilot, lambda: app.message == f"ok: Player in at seat {SEAT_A}")
        # B: the dealer's command
        await one.client.dealer("player_in", seat=SEAT_B, card=CARD_B)
        await one.deal(((SEAT_B, 2 * m), (SEAT_A, m)), ((SEAT_B, m), (SEAT_A, 3 * m)), ((SEAT_A, 2 * m),))
        # A leaves table 1 (seat 3 is dealt on without him: not his) and sits down at table 2
        await one.client.dealer("player_out", seat=SEAT_A)
        await two.client.dealer("player_in", seat=SEAT_A2, card=CARD_A)
        # B leaves while his last round is being dealt: the round is still his (seated when it was dealt)
        last = asyncio.create_task(one.deal(((SEAT_B, 4 * m), (SEAT_A, m))))
        await one.client.wait_for(lambda v: v.states["table"].get("state") in ("dealing", "players"), WAIT)
        await one.client.dealer("player_out", seat=SEAT_B)
        await last
        await two.deal(((SEAT_A2, 5 * m), (2, m)), ((SEAT_A2, m),), ((2, m),))
        await one.close()
        await two.close()


def journal_events(db: Path) -> list[tuple[int, str, bytes]]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return [
            (i, t, p.encode() if isinstance(p, str) else p)
            for i, t, p in conn.execute("SELECT event_id, topic, payload FROM events ORDER BY event_id")
        ]


def journal_records(db: Path, kinds: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT kind, data FROM records ORDER BY seq").fetchall()
    return [(k, json.loads(d)) for k, d in rows if k in kinds]


def stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    floor = FloorStack(tmp_path_factory.mktemp("players"), FloorOptions(tables=2, workers=1, profile=PROFILE))
    try:
        floor.start()
        with psycopg.connect(floor.dsn) as conn:
            a_id = register(conn, CARD_A, "Jane Doe", "born 1980, room 1204", "mgr-ines")
        since = datetime.now(UTC) - timedelta(minutes=1)
        asyncio.run(play(floor))
        journals = {s.opts.table_id: s.workdir / "state" / "journal.db" for s in floor.tables}
        for table, db in journals.items():  # every journaled event archived, byte for byte
            kept = {i: raw for i, _t, raw in journal_events(db)}
            wait_until(
                lambda t=table, k=kept: k.items() <= archived(floor.dsn, t).items(), 60, f"{table} archived"
            )
        yield Played(floor, since, datetime.now(UTC) + timedelta(minutes=1), journals, a_id)
    finally:
        floor.stop()


def archived(dsn: str, table: str) -> dict[int, bytes]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT event_id, raw FROM events WHERE table_id = %s", (table,)).fetchall()
    return {i: bytes(raw) for i, raw in rows}


# ---- the recomputation from the tables' journals (independent of floor/players) ----
@dataclass
class Figures:
    rounds: int = 0
    handle: int = 0
    initial_bets: int = 0
    largest: int = 0
    win: int = 0  # the house's
    theo_units: float = 0.0  # Σ initial bet × edge, rounded once at the end

    def add(self, data: dict[str, Any], seat: int, edge: float) -> None:
        hands = [h for h in data.get("hands") or [] if h["seat"] == seat]
        if not hands:
            return  # no bet at his seat: not a round of his
        first = next(h for h in hands if h["hand"] == 0)
        bet = first["stake"] // (2 if first.get("doubled") else 1)
        extra = [x for k in ("insurance", "side_bets") for x in data.get(k) or [] if x["seat"] == seat]
        self.rounds += 1
        self.handle += sum(h["stake"] for h in hands) + sum(x.get("stake", x.get("amount", 0)) for x in extra)
        self.win -= sum(h["net"] for h in hands) + sum(x["net"] for x in extra)
        self.initial_bets += bet
        self.largest = max(self.largest, bet)
        self.theo_units += bet * edge

    def row(self) -> dict[str, int]:
        return {"rounds": self.rounds, "handle_minor": self.handle, "initial_bets_minor": self.initial_bets,
                "largest_bet_minor": self.largest, "win_minor": self.win,
                "theoretical_win_minor": round(self.theo_units)}  # fmt: skip


def from_journals(journals: dict[str, Path]) -> tuple[dict[str, Figures], dict[tuple[str, str], Figures]]:
    """Per player and per (player, table) visit: his seat's settlements of the rounds dealt (no more bets)
    between his ``in`` and his ``out``."""
    edge = profile_edge(PROFILE)  # the edge the floor states (docs/floor.md "theoretical win")
    players: dict[str, Figures] = {}
    visits: dict[tuple[str, str], Figures] = {}
    for table, db in journals.items():
        at: dict[int, str] = {}  # seat -> the player seated there now
        dealt: dict[str, dict[int, str]] = {}  # round id -> who sat where when it was dealt (docs/floor.md)
        for _i, topic, raw in journal_events(db):
            data = json.loads(raw)["data"]
            if topic == "events/player":
                if data["action"] == "in":
                    at[data["seat"]] = data["player"]
                else:
                    assert at.pop(data["seat"]) == data["player"]
            elif topic == "events/round" and data.get("phase") == "dealing":
                dealt[str(data["round_id"])] = dict(at)
            elif topic == "events/settlement":
                for seat, player in dealt[str(data["round_id"])].items():
                    players.setdefault(player, Figures()).add(data, seat, edge)
                    visits.setdefault((player, table), Figures()).add(data, seat, edge)
        assert at == {}, f"{table}: players still seated after close_table: {at}"
    return players, visits


FIGURE_COLUMNS = ("rounds", "handle_minor", "initial_bets_minor", "largest_bet_minor", "win_minor",
                  "theoretical_win_minor")  # fmt: skip


def test_each_rating_equals_the_recomputation_from_the_tables_journals(
    played: Played, tmp_path: Path
) -> None:
    players, visits = from_journals(played.journals)
    a, b = f"card:{CARD_A}", f"card:{CARD_B}"
    assert set(players) == {a, b}
    assert (
        players[a].rounds == 3 + 2 and players[b].rounds == 3
    )  # B sat out a round at T1 (no bet at his seat)
    window = ["--since", played.since.isoformat(), "--until", played.until.isoformat()]
    out = tmp_path / "players.csv"
    assert tablectl(["floor", "players", "--dsn", played.floor.dsn, *window, "--csv", str(out)]) == 0
    with psycopg.connect(played.floor.dsn) as conn:
        rep = load_players(conn, played.since, played.until)
    assert rep.problems == [] and rep.refused == 0
    label = {p: rep.label(p) for p in (a, b)}  # the card, or the tombstone once erased (the other test)
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    by_player = {r["player"]: r for r in rows if r["level"] == "player"}
    assert set(by_player) == set(label.values())
    for p, want in players.items():
        row = by_player[label[p]]
        assert {c: int(row[c]) for c in FIGURE_COLUMNS} == want.row(), p
        rating = next(r for r in rep.players if r.player == p)
        got = rating.play
        assert (
            len(got.rounds),
            got.handle,
            got.initial_bets,
            got.largest,
            got.win,
            got.theoretical_win,
        ) == tuple(want.row().values()), p
        # hours played: only his rounds with a bet, never past his visits' ends
        sat = sum(((v.end or played.until) - v.start).total_seconds() for v in rating.visits)
        assert 0 < rating.seconds <= sat, p
    # per visit: A has one at each table (the first ended by his player_out, not by close_table), B one at T1
    seen = {(r.player, r.visits[0].table): r for r in rep.visits}
    assert set(seen) == set(visits) == {(a, "T1"), (a, "T2"), (b, "T1")}
    for key, want in visits.items():
        got = seen[key].play
        assert (
            len(got.rounds),
            got.handle,
            got.initial_bets,
            got.largest,
            got.win,
            got.theoretical_win,
        ) == tuple(want.row().values()), key
    # one time for each move: the table's record (``at``, and state/players ``since``: to the second, the table's
    # fx.ts()), its envelope (``ts``, to the millisecond) and the floor's visit (the envelope's) agree
    moves = {(t, d["data"]["seat"], d["data"]["player"], d["data"]["action"]): d["ts"]
             for t, db in played.journals.items() for _i, topic, raw in journal_events(db)
             if topic == "events/player" for d in [json.loads(raw)]}  # fmt: skip
    for t, db in played.journals.items():
        for kind, data in journal_records(db, ("player_in", "player_out")):
            move = "in" if kind == "player_in" else "out"
            ts = stamp(moves[(t, data["seat"], data["player"], move)])
            assert stamp(data["at"]) == ts.replace(microsecond=0), (t, kind)
    for v in (v for r in rep.visits for v in r.visits):
        assert v.start == stamp(moves[(v.table, v.seat, v.player, "in")]), v
    # B's out came while his last round was in play (between its dealing and its settlement), and it is his
    ev = [(i, t, json.loads(raw)["data"]) for i, t, raw in journal_events(played.journals["T1"])]
    out_b = next(i for i, t, d in ev if t == "events/player" and d["action"] == "out" and d["player"] == b)
    dealt = max((i, d["round_id"]) for i, t, d in ev if t == "events/round" and d.get("phase") == "dealing"
                and i < out_b)  # fmt: skip
    settled = min((i, d["round_id"]) for i, t, d in ev if t == "events/settlement" and i > dealt[0])
    assert dealt[1] == settled[1] and settled[0] > out_b
    ended = {r.player: [v.end_reason.value for v in r.visits] for r in rep.players}
    assert ended == {a: ["player_out", "close_table"], b: ["player_out"]}
    # the pit terminal's swipe: by the dealer, the card's track 2 only (never the holder's name)
    t1 = [json.loads(raw) for _i, t, raw in journal_events(played.journals["T1"]) if t == "events/player"]
    assert t1[0]["data"] == {"action": "in", "seat": SEAT_A, "player": a, "by": "dealer",
                             "session_id": t1[0]["data"]["session_id"]}  # fmt: skip
    assert not any(b"DOE" in raw for db in played.journals.values() for _i, _t, raw in journal_events(db))


def test_an_erasure_removes_the_personal_data_and_every_chain_still_verifies(played: Played) -> None:
    dsn = played.floor.dsn
    before = {t: archived(dsn, t) for t in played.journals}
    assert tablectl(["floor", "players", "erase", "--dsn", dsn, "--player", CARD_A, "--by", "dpo-olga",
                     "--reason", "the player asked"]) == 0  # fmt: skip
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT card, name, details, erased_at IS NOT NULL FROM players WHERE player_id = %s",
            (played.a_id,),
        ).fetchone()
        assert row == (None, None, None, True)
        personal = conn.execute(
            "SELECT count(*) FROM players WHERE card = %s OR name LIKE %s OR details LIKE %s",
            (CARD_A, "%Jane%", "%1204%"),
        ).fetchone()
        assert personal == (0,)
        assert (
            load_players(conn, played.since, played.until).label(f"card:{CARD_A}") == f"erased:{played.a_id}"
        )
    for table, db in played.journals.items():
        config = played.floor.tables[int(table[1:]) - 1].config_path  # its journal and its audit key
        assert tablectl(["journal", "verify", "--config", str(config), "--db", str(db)]) == 0, table
        after = archived(dsn, table)
        assert before[table].items() <= after.items()  # the archived envelopes are the table's, untouched
        prev = EVENT_GENESIS
        for i in sorted(after):  # the archive's chain, from the table's genesis on
            link = read_chain(after[i], prev)
            assert link is not None and link.self_consistent, (table, i)
            prev = link.chain
