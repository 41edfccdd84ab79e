"""Player ratings on the floor (issue 41): two real table cores deal simulated players' rounds, the tables'
``events/player`` (the table side's contract) go with them into a real PostgreSQL in chained envelopes, and every
figure of each rating is recomputed here from what was dealt (the simulator's own rounds and the envelopes' times),
not from the floor's code path. One player moves from T1 to T2 while still in at T1: one player, one visit."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cli import main as tablectl
from controller.journal.event_chain import EVENT_GENESIS, read_chain
from controller.rules.profiles import known_profile
from controller.rules.shoe_math import finite_house_edge
from floor.common.messages import Envelope, classify
from floor.players.events import parse_player_event
from floor.players.load import load_players
from floor.players.ratings import comp
from floor.players.registry import PlayerError, change_settings, erase_expired, find, register
from floor.players.visits import EndReason, build_visits
from floor.reports.play_rounds import seat_rounds
from floor.web.surveillance_view import surveillance_view
from tablebench.ap_players import REGULAR_SEAT, SUBJECT_SEAT, SimRound, simulate
from tests.support.floor import migrated_database
from tests.support.players import FloorClock

WHEN = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
SINCE, UNTIL = WHEN - timedelta(hours=1), WHEN + timedelta(hours=6)
ANA = "card:4711AB"
HOSTILE = "<b>red hat</b> & \x1b[2J"


@pytest.fixture(scope="module")
def floor_two_tables():
    """T1: an anonymous player at seat 1 all along, ANA at seat 5 for 8 rounds; then ANA sits at T2 seat 5 (still in
    at T1: the floor ends that visit then) for 6 rounds and leaves; T1 deals 4 more rounds with seat 5 betting
    (someone unnamed), T1's own out for ANA comes late, T2 deals 3 more, T1 closes."""
    t1, t2 = (
        simulate("random", shoes=1, seed=11, player=None),
        simulate("random", shoes=1, seed=12, player=None),
    )
    c = FloorClock(WHEN)
    c.player("T1", "in", REGULAR_SEAT, "anon:sess-1-1", description=HOSTILE[:60])
    c.player("T1", "in", SUBJECT_SEAT, ANA)
    c.deal("T1", t1[:8])
    c.player("T2", "in", SUBJECT_SEAT, ANA, session_id="sess-2")
    c.deal("T2", t2[:6])
    c.deal("T1", t1[8:12])
    c.player("T1", "out", SUBJECT_SEAT, ANA, reason="player_out")
    c.player("T2", "out", SUBJECT_SEAT, ANA, reason="player_out", session_id="sess-2")
    c.deal("T2", t2[6:9])
    c.player("T1", "out", REGULAR_SEAT, "anon:sess-1-1", reason="close_table")
    with migrated_database() as dsn:
        c.store(dsn)
        yield dsn, c, t1, t2


def _seat(rounds: list[SimRound], seat: int):
    return [s for r in rounds for s in seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe,
                                                    count=r.count)[0] if s.seat == seat]  # fmt: skip


def _spans(c: FloorClock, table: str, end: datetime | None = None) -> dict[str, float]:
    """Each round's span from the envelopes: its first events/round to the table's next round's (capped 300 s),
    the last one to its settlement; never past ``end`` (the visit's)."""
    starts: dict[str, datetime] = {}
    settled: dict[str, datetime] = {}
    for e in c.tables[table].envelopes:
        rid = e.data.get("round_id")
        if e.topic == "events/round" and rid not in starts:
            starts[rid] = e.ts
        if e.topic == "events/settlement":
            settled[rid] = e.ts
    ids = list(starts)
    stop = end or datetime.max.replace(tzinfo=UTC)
    return {rid: min(300.0, (min(stop, starts[ids[i + 1]] if i + 1 < len(ids) else settled[rid]) - starts[rid])
                     .total_seconds()) for i, rid in enumerate(ids)}  # fmt: skip


def test_each_rating_is_recomputed_from_what_the_tables_dealt(floor_two_tables):
    dsn, c, t1, t2 = floor_two_tables
    with psycopg.connect(dsn) as conn:
        change_settings(conn, "mgr-ines", comp_share_pct=Decimal("25"))
        report = load_players(conn, SINCE, UNTIL)
    assert report.problems == [] and report.refused == 0
    [ana] = [r for r in report.players if r.player == ANA]
    first, second = ana.visits
    assert (first.table, first.seat, first.end_reason) == ("T1", SUBJECT_SEAT, EndReason.MOVED)
    assert "moved: seated at S1/T2 seat 5" in first.ending()
    assert (second.table, second.end_reason) == ("T2", EndReason.PLAYER_OUT)
    # the recomputation: the simulator's own rounds of seat 5, T1's first 8 and T2's first 6
    mine = _seat(t1[:8], SUBJECT_SEAT) + _seat(t2[:6], SUBJECT_SEAT)
    edge = finite_house_edge(known_profile("pt-2001")).basic_strategy  # the exact edge of the game dealt
    assert len(ana.play.rounds) == len(mine) == 14 and ana.tables == ["S1/T1", "S1/T2"]
    assert ana.play.handle == sum(s.staked for s in mine)  # doubles and splits as settled
    assert ana.play.initial_bets == sum(s.bet for s in mine)
    assert ana.average_bet == round(sum(s.bet for s in mine) / 14) and ana.play.largest == max(
        s.bet for s in mine
    )
    assert ana.play.win == -sum(s.net for s in mine)
    assert ana.play.theoretical_win == round(sum(s.bet for s in mine) * edge) > 0
    assert ana.comp(report.settings.comp_share_pct) == int(ana.play.theoretical_win * 25 // 100)
    checks = [ch for s in mine for ch in s.checks]
    assert ana.play.precision == sum(ch.matches for ch in checks) / len(checks)
    moved, left = [e.ts for e in c.tables["T2"].envelopes if e.topic == "events/player"]  # in, out at T2
    s1, s2 = _spans(c, "T1", end=moved), _spans(c, "T2", end=left)
    ids1, ids2 = list(s1)[:8], list(s2)[:6]
    assert ana.seconds == pytest.approx(sum(s1[i] for i in ids1) + sum(s2[i] for i in ids2))
    assert ana.buy_in is None  # the tables do not record a buy-in
    # per visit: the two visits add up to the player's figures
    visits = [r for r in report.visits if r.player == ANA]
    assert [len(v.play.rounds) for v in visits] == [8, 6]
    assert sum(v.play.handle for v in visits) == ana.play.handle
    # the anonymous player at seat 1 of T1: every T1 round until the table closed
    [anon] = [r for r in report.players if r.player.startswith("anon:")]
    assert len(anon.play.rounds) == 12 and anon.visits[0].end_reason == EndReason.CLOSE_TABLE
    assert anon.visits[0].description == HOSTILE[:60]


def test_surveillance_follows_a_seated_player_across_tables_by_card_never_by_name(floor_two_tables):
    dsn, *_ = floor_two_tables
    with psycopg.connect(dsn) as conn:
        view = surveillance_view(conn, SINCE, UNTIL, True)
    [ana] = [r for r in view["sessions"] if r["level"] == "player_visits" and r["player"] == ANA]
    seat5 = [r for r in view["sessions"] if r["level"] == "seat" and r["seat"] == SUBJECT_SEAT]
    assert ana["rounds"] == 14 and ana["table"] == "" and "name" not in ana
    assert {r["table"] for r in seat5} == {"T1", "T2"}  # per seat: a session at each table, nobody's
    _, _, t1, t2 = floor_two_tables
    not_his = _seat(t1[8:12], SUBJECT_SEAT) + _seat(t2[6:9], SUBJECT_SEAT)  # after he moved, after he left
    assert ana["handle"] == sum(r["handle"] for r in seat5) - sum(s.staked for s in not_his)


def test_floor_players_text_csv_and_html_escape_what_a_table_sent(floor_two_tables, tmp_path, capsys):
    dsn, *_ = floor_two_tables
    window = ["--since", SINCE.isoformat(), "--until", UNTIL.isoformat()]
    assert tablectl(["floor", "players", "--dsn", dsn, *window, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    players = {r["player"]: r for r in rows if r["level"] == "player"}
    assert players[ANA]["tables"] == "S1/T1 S1/T2" and players[ANA]["rounds"] == "14"
    assert tablectl(["floor", "players", "--dsn", dsn, *window, "--player", "4711AB"]) == 0
    text = capsys.readouterr().out
    assert ANA in text and "anon:" not in text and "moved" in text
    assert tablectl(["floor", "players", "--dsn", dsn, *window, "--html", str(tmp_path / "p.html")]) == 0
    page = (tmp_path / "p.html").read_text()
    assert "<b>red hat" not in page and "&lt;b&gt;red hat&lt;/b&gt;" in page and "\x1b" not in page


def test_register_and_erase_leave_the_tables_journals_verifiable(floor_two_tables, capsys):
    dsn, *_ = floor_two_tables
    with psycopg.connect(dsn) as conn:
        pid = register(conn, "4711AB", "Ana Example", "born 1980", "mgr-ines")
        report = load_players(conn, SINCE, UNTIL)
        assert report.name(ANA) == "Ana Example" and report.player_id(ANA) == pid
        conn.execute(
            "INSERT INTO floor_alerts (site, table_id, kind, severity, message, details, dedupe_key)"
            " VALUES ('S1', '-', 'advantage_play', 'warning', %s, %s, 'x')",
            (f"advantage play? player {ANA} at the floor", f'{{"player": "{ANA}"}}'),
        )
        conn.commit()
        raw_before = conn.execute(
            "SELECT site, table_id, event_id, raw FROM events ORDER BY 1, 2, 3"
        ).fetchall()
    assert tablectl(["floor", "players", "erase", "--dsn", dsn, "--player", "4711AB", "--by", "dpo-olga",
                     "--reason", "the player asked"]) == 0  # fmt: skip
    capsys.readouterr()
    with psycopg.connect(dsn) as conn:
        gone = find(conn, pid)
        assert gone is not None and gone.card is None and gone.name is None and gone.details is None
        assert conn.execute("SELECT count(*) FROM players WHERE name LIKE '%Ana%' OR details LIKE '%1980%'"
                            ).fetchone() == (0,)  # fmt: skip
        msg, details = conn.execute(
            "SELECT message, details FROM floor_alerts WHERE dedupe_key = 'x'"
        ).fetchone()
        assert (
            "4711AB" not in msg + str(details)
            and f"erased:{pid}" in msg
            and details["player"] == f"erased:{pid}"
        )
        log = conn.execute(
            "SELECT user_name, action, player_id, detail FROM player_log ORDER BY id"
        ).fetchall()
        assert log[-1] == ("dpo-olga", "erase", pid, "the player asked")
        assert not any("Ana" in str(row) for row in log)  # nothing personal in the journal
        # the reports name the tombstone, and the figures stay
        report = load_players(conn, SINCE, UNTIL)
        assert report.label(ANA) == f"erased:{pid}" and report.name(ANA) == ""
        # the tables' journals as archived: byte for byte, and each table's chain still verifies
        raw_after = conn.execute(
            "SELECT site, table_id, event_id, raw FROM events ORDER BY 1, 2, 3"
        ).fetchall()
    assert raw_after == raw_before
    for table in ("T1", "T2"):
        prev = EVENT_GENESIS
        for _site, t, _eid, raw in raw_after:
            if t != table:
                continue
            link = read_chain(bytes(raw), prev)
            assert link is not None and link.self_consistent
            prev = link.chain
    with psycopg.connect(dsn) as conn, pytest.raises(PlayerError, match="erased"):
        register(conn, "4711AB", "Ana Again", "", "mgr-ines")  # an erased card is not registered again


def test_retention_erases_players_not_seen_for_the_days_set(floor_two_tables):
    dsn, *_ = floor_two_tables
    with psycopg.connect(dsn) as conn:
        old = register(conn, "OLD0001", "Old Timer", "", "mgr-ines")
        seen = register(conn, "SEEN0002", "Still Here", "", "mgr-ines")
        conn.execute("UPDATE players SET registered_at = now() - interval '400 days'")
        conn.execute(
            "INSERT INTO events (site, table_id, event_id, topic, type, ts, data, raw, source) VALUES"
            " ('S1', 'T9', 1, 'events/player', 'player', now() - interval '10 days', %s, '\\x00', 'live')",
            ('{"action": "in", "player": "card:SEEN0002", "seat": 1}',),
        )
        conn.commit()
        assert erase_expired(conn, "retention") == []  # no retention set: nothing erased
        change_settings(conn, "mgr-ines", retention_days=365)
        erased = erase_expired(conn, "retention")
        assert old in erased and seen not in erased
        assert find(conn, seen).name == "Still Here" and find(conn, old).name is None


def test_comp_is_a_share_of_theo_rounded_down():
    assert comp(1999, Decimal("10")) == 199 and comp(-50, Decimal("20")) == 0 and comp(0, Decimal("100")) == 0


_VALID = {
    "action": "in",
    "seat": 3,
    "player": "anon:sess-1-2",
    "by": "pit-ana",
    "session_id": "sess-1",
    "description": "tall, grey coat",
}
_HOSTILE = st.one_of(
    st.text(max_size=80),
    st.integers(-5, 40),
    st.none(),
    st.booleans(),
    st.sampled_from(["out", "in", "card:4711", "card:<b>", "anon:x-1", "player_out", "close_table"]),
)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.dictionaries(st.sampled_from([*_VALID, "reason"]), _HOSTILE), st.sets(st.sampled_from(list(_VALID)))
)
def test_a_player_event_is_parsed_or_refused_with_a_reason_never_a_crash(changed, dropped):
    data = {k: v for k, v in {**_VALID, **changed}.items() if k not in dropped}
    got = parse_player_event("S1", "T1", 1, WHEN, data)
    if isinstance(got, str):
        assert got  # a reason, in words
        return
    assert got.move in ("in", "out") and 1 <= got.seat <= 16 and len(got.description) <= 60
    assert got.player.startswith(("card:", "anon:")) and (got.reason is None) == (got.move == "in")
    assert not got.description or got.player.startswith("anon:")  # a card's player carries no description


def test_the_contract_s_own_examples_are_accepted_and_a_description_on_a_card_refused():
    ok = parse_player_event("S1", "T1", 7, WHEN, {**_VALID, "player": "card:4711AB", "description": ""})
    assert not isinstance(ok, str) and ok.card == "4711AB"
    out = parse_player_event("S1", "T1", 8, WHEN, {**_VALID, "action": "out", "reason": "close_table"})
    assert not isinstance(out, str) and out.reason == "close_table"
    assert parse_player_event("S1", "T1", 9, WHEN, {**_VALID, "player": "card:4711AB"}) == (
        "a description is for an anonymous player only"
    )
    dealer = parse_player_event("S1", "T1", 10, WHEN, {**_VALID, "by": "José Maria", "session_id": None})
    assert not isinstance(dealer, str) and (dealer.by, dealer.session_id) == (
        "José Maria",
        "",
    )  # the dealer on duty
    assert parse_player_event("S1", "T1", 11, WHEN, {**_VALID, "by": "x\x1b[2J"}) == (
        "by is not a name of 1 to 64 printable characters"
    )
    too_long = parse_player_event("S1", "T1", 9, WHEN, {**_VALID, "description": "x" * 61})
    assert too_long == "description is not text of at most 60 characters"


def _ev(
    table: str, event_id: int, second: int, action: str, seat: int, player: str, reason: str | None = None
):
    data = {
        "action": action,
        "seat": seat,
        "player": player,
        "by": "pit-ana",
        "session_id": "20261123-120000",
    }
    if reason:
        data["reason"] = reason
    got = parse_player_event("S1", table, event_id, WHEN + timedelta(seconds=second), data)
    assert not isinstance(got, str), got
    return got


def test_one_player_one_visit_across_tables_and_what_does_not_fit_is_said():
    found = build_visits([
        _ev("T2", 1, 50, "in", 3, "card:BOB1"),  # Bob sits at T2 while still in at T1 (given out of order)
        _ev("T1", 1, 10, "in", 1, "card:BOB1"),
        _ev("T1", 2, 20, "in", 2, "card:ANA1"),
        _ev("T1", 3, 30, "in", 2, "card:CARL"),  # a second player at Ana's seat: her visit ends, said
        _ev("T1", 4, 60, "out", 1, "card:BOB1", "player_out"),  # T1's own out for Bob: already ended
        _ev("T1", 5, 70, "out", 4, "card:DAN1", "player_out"),  # nobody was in
        _ev("T1", 6, 80, "out", 2, "card:CARL", "close_table"),
    ])  # fmt: skip
    ends = {(v.player, v.table): (v.end_reason, v.end, v.end_event) for v in found.visits}
    assert ends[("card:BOB1", "T1")] == (EndReason.MOVED, WHEN + timedelta(seconds=50), None)
    assert ends[("card:ANA1", "T1")] == (EndReason.REPLACED, WHEN + timedelta(seconds=30), 3)
    assert (
        ends[("card:CARL", "T1")][0] == EndReason.CLOSE_TABLE
        and ends[("card:BOB1", "T2")][0] == EndReason.OPEN
    )
    assert found.problems == ["S1/T1 event 5: out of card:DAN1 at seat 4, never in"]
    [bob_t1] = [v for v in found.visits if v.player == "card:BOB1" and v.table == "T1"]
    # a round of T1 is his while it began before he sat down at T2 (by time: the end came from another table)
    assert bob_t1.holds(3, WHEN + timedelta(seconds=49)) and not bob_t1.holds(9, WHEN + timedelta(seconds=51))
    assert not bob_t1.holds(1, WHEN + timedelta(seconds=11))  # his own in: no round of his before it


def test_a_player_event_from_the_table_passes_the_floors_door():
    payload = json.dumps({"data": {**_VALID, "player": "card:4711AB", "description": ""}, "event_id": 5,
                          "table": "T1", "ts": "2026-11-23T12:00:00.000Z", "type": "player"}).encode()  # fmt: skip
    env = classify("casino/S1/table/T1/events/player", payload, "cmd/replay/response/archive")
    assert isinstance(env, Envelope) and env.topic == "events/player" and env.data["player"] == "card:4711AB"


def test_an_actions_dsn_before_or_after_the_action_is_the_one_used():
    from controller.cli.tablectl import build_parser

    before = build_parser("floor").parse_args(["floor", "players", "--dsn", "A", "erase", "--player", "x",
                                               "--reason", "r"])  # fmt: skip
    after = build_parser("floor").parse_args(["floor", "players", "erase", "--dsn", "B", "--player", "x",
                                              "--reason", "r"])  # fmt: skip
    assert (before.dsn, after.dsn) == ("A", "B")
